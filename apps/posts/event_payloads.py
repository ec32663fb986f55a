"""The `data` of the post.* events (apps.core.events): what apps/posts/serializers.py writes into
them, described for the OpenAPI schema's webhooks."""

from rest_framework import serializers

from apps.core.events import describe_payloads
from apps.posts.events import PostEvent
from apps.posts.serializers import PostContentSerializer, PublicationSerializer


class PostEventDataSerializer(serializers.Serializer):
    post = PostContentSerializer(help_text="The full post at the time of the event.")


class PostFailedEventDataSerializer(serializers.Serializer):
    post = PostContentSerializer(allow_null=True, help_text="The post as it is now; null once it was deleted.")
    post_id = serializers.IntegerField(help_text="The post's id, also once it was deleted.")
    publication = PublicationSerializer(help_text="The job that failed for good; `last_error` says why.")


describe_payloads(
    {
        PostEvent.UPDATED: PostEventDataSerializer,
        PostEvent.PUBLISHING_PENDING: PostEventDataSerializer,
        PostEvent.PUBLISHED: PostEventDataSerializer,
        PostEvent.UNPUBLISHED: PostEventDataSerializer,
        PostEvent.FAILED: PostFailedEventDataSerializer,
    }
)
