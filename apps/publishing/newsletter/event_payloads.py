"""The `data` of the subscriber.* events (apps.core.events), described for the OpenAPI schema's
webhooks: what serializers.subscriber_webhook_data writes."""

from rest_framework import serializers

from apps.channels.serializers import ChannelRefSerializer
from apps.core.events import describe_payloads
from apps.publishing.newsletter.events import SubscriberEvent
from apps.publishing.newsletter.serializers import SubscriberSerializer


class SubscriberEventDataSerializer(serializers.Serializer):
    subscriber = SubscriberSerializer(help_text="The subscriber as the API shows it, after the change.")
    channel = ChannelRefSerializer(help_text="The newsletter channel whose list it is.")


describe_payloads(
    {
        SubscriberEvent.CONFIRMED: SubscriberEventDataSerializer,
        SubscriberEvent.UNSUBSCRIBED: SubscriberEventDataSerializer,
    }
)
