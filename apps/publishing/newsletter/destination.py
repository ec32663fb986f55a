"""The newsletter destination: a post is an edition, mailed once to the channel's confirmed
subscribers (sending.py)."""

from apps.core.destinations import DestinationKind, Recipients
from apps.publishing.newsletter.models import PLATFORM, Edition


def _load(channel_id: int):
    from apps.publishing.newsletter.sending import NewsletterPublisher

    return NewsletterPublisher(channel_id)


def recipients(post_ids: list[int]) -> dict[int, Recipients]:
    """The recipient counts of the posts' editions, by post id (one query; the counts are kept on
    the edition's row, so its cost does not grow with the audience)."""
    editions = Edition.objects.filter(post_id__in=post_ids).only(
        "post_id", "total", "sent", "failed", "suppressed", "uncertain"
    )
    return {edition.post_id: Recipients(**edition.recipients()) for edition in editions}


KIND = DestinationKind(
    platform=PLATFORM,
    label="Newsletter",
    load=_load,
    missing="",
    publishes="An edition mailed once to the channel's confirmed subscribers; published when all are mailed.",
    reference="edition",
    recipients=recipients,
    site="apps.publishing.newsletter.pages",
    site_summary="Its subscribe form and the archive of its editions.",
    admin="apps.publishing.newsletter.admin",
    access={
        # A newsletter's readers are personal data (editors preview an edition and send themselves
        # a test from the post's page). Subscribers are added, imported and erased, never edited; a
        # suppression is lifted ("delete") with a reason; an edition's "change" is "Send to uncertain".
        "system.settings": {
            "publishing_newsletter.newsletter": frozenset({"view", "add", "change"}),
            "publishing_newsletter.subscriber": frozenset({"view", "add", "delete"}),
            "publishing_newsletter.suppression": frozenset({"view", "delete"}),
            "publishing_newsletter.edition": frozenset({"view", "change"}),
        }
    },
    api_urls="apps.publishing.newsletter.urls",
    urls="apps.publishing.newsletter.web_urls",
    # An edition's subject is the post's title, its inbox preview line the teaser (message.py).
    field_labels={"title": "Subject", "teaser": "Preview line"},
)
