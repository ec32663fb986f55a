"""A post's media items as the write API takes them: an uploaded medium of the account's library by
its id, or an image that lives elsewhere by its address."""

from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail

from apps.api.request_fields import StrictCharField, StrictSerializer
from apps.posts.models import URL_MAX_LENGTH, MediaKind


class MediaEntrySerializer(StrictSerializer):
    """One media item: an uploaded medium of the account's library, or an image that lives elsewhere."""

    read_only_fields = ("id",)

    medium = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, help_text="An uploaded medium's id (/v1/media); or give `url`."
    )
    url = StrictCharField(required=False, max_length=URL_MAX_LENGTH, help_text="An external http(s) address.")
    kind = serializers.ChoiceField(choices=MediaKind.choices, required=False, help_text="With `url`; default `image`.")
    alt_text = StrictCharField(
        required=False, allow_blank=True, max_length=500, help_text="Empty: the medium's own alt text."
    )
    width = serializers.IntegerField(required=False, allow_null=True, min_value=1, help_text="With `url`: pixels.")
    height = serializers.IntegerField(required=False, allow_null=True, min_value=1, help_text="With `url`: pixels.")

    def validate(self, attrs):
        if (attrs.get("medium") is None) == (not attrs.get("url")):
            raise serializers.ValidationError(
                {"medium": [ErrorDetail("Give either `medium` (an uploaded medium's id) or `url`.", code="one_of")]}
            )
        if attrs.get("medium") is not None and set(attrs) & {"url", "kind", "width", "height"}:
            raise serializers.ValidationError(
                {"medium": [ErrorDetail("An uploaded medium has its own url, kind and size.", code="one_of")]}
            )
        return attrs
