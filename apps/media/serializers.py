"""A medium as the API shows it (`data` of /v1/media and its items), rendered from the rows of
selectors.medium_rows."""

from rest_framework import serializers

from apps.core.serializers import ResponseSerializer, UtcDateTimeField
from apps.media.models import MediumKind


class VariantSerializer(ResponseSerializer):
    width = serializers.IntegerField()
    height = serializers.IntegerField()
    mime_type = serializers.CharField()
    url = serializers.CharField()


class MediumSerializer(ResponseSerializer):
    id = serializers.IntegerField()
    url = serializers.CharField(help_text="The image's public address: readers fetch it from here.")
    kind = serializers.ChoiceField(choices=MediumKind.choices)
    mime_type = serializers.CharField(help_text="The stored image's type, decided from its content.")
    width = serializers.IntegerField(help_text="Pixels, upright (the camera's orientation applied).")
    height = serializers.IntegerField(help_text="Pixels, upright.")
    bytes = serializers.IntegerField(help_text="Size of the stored file (its metadata stripped).")
    alt_text = serializers.CharField(help_text="What the image shows; empty when not given.")
    created_at = UtcDateTimeField()
    variants = VariantSerializer(
        many=True,
        help_text="Smaller copies (WebP and the original's type) for srcset, narrowest first; empty until the "
        "worker made them, and for images narrower than the smallest width or animated.",
    )
