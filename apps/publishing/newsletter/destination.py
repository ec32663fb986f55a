"""The newsletter destination: a post is an edition, mailed once to the channel's confirmed
subscribers (sending.py)."""

from apps.channels.models import Platform
from apps.core.destinations import DestinationKind


def _load(channel_id: int):
    from apps.publishing.newsletter.sending import NewsletterPublisher

    return NewsletterPublisher(channel_id)


KIND = DestinationKind(
    platform=Platform.NEWSLETTER,
    load=_load,
    missing="",
    publishes="An edition mailed once to the channel's confirmed subscribers; published when all are mailed.",
    reference="edition",
)
