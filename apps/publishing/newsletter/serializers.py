"""A newsletter's subscriber as the API and the webhook bodies show it."""

from rest_framework import serializers

from apps.channels.serializers import ChannelRefSerializer
from apps.core.serializers import ResponseSerializer, UtcDateTimeField
from apps.publishing.newsletter.models import SubscriberStatus


class SubscriberSerializer(ResponseSerializer):
    """A person on a newsletter channel's list. Only `confirmed` ones are mailed."""

    id = serializers.IntegerField()
    email = serializers.CharField(help_text="As stored: without surrounding spaces, in lower case.")
    name = serializers.CharField(help_text="Empty when not given.")
    status = serializers.ChoiceField(
        choices=SubscriberStatus.choices,
        help_text="`unconfirmed`: has not pressed the confirmation e-mail's button yet; `confirmed`: mailed; "
        "`unsubscribed`: left, never mailed again unless they subscribe again themselves.",
    )
    created_at = UtcDateTimeField()
    confirmed_at = UtcDateTimeField(allow_null=True, help_text="null until confirmed.")
    unsubscribed_at = UtcDateTimeField(allow_null=True, help_text="null unless unsubscribed.")


def subscriber_webhook_data(subscriber) -> dict:
    """`data` of subscriber.confirmed and subscriber.unsubscribed: the subscriber and its channel."""
    return {
        "subscriber": SubscriberSerializer(subscriber).data,
        "channel": ChannelRefSerializer(subscriber.channel).data,
    }
