"""The media library's /v1 endpoints: upload (the one endpoint that takes multipart/form-data), list,
read, change the alt text, delete."""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.models import Scope
from apps.api.idempotency import idempotent
from apps.api.pagination import PagePagination
from apps.api.permissions import require_permission
from apps.api.request_fields import StrictCharField, StrictSerializer
from apps.api.schema import common_errors, error
from apps.media.models import ALT_TEXT_MAX_LENGTH
from apps.media.selectors import media_of_account, medium_get, medium_rows
from apps.media.serializers import MediumSerializer
from apps.media.services import medium_delete, medium_update, medium_upload
from apps.users.models import Permission


class MediumResponseSerializer(serializers.Serializer):
    data = MediumSerializer()


class UploadSerializer(StrictSerializer):
    file = serializers.FileField(
        allow_empty_file=True, help_text="The image: PNG, JPEG, GIF, WebP or AVIF (decided from its content)."
    )
    alt_text = StrictCharField(required=False, allow_blank=True, max_length=ALT_TEXT_MAX_LENGTH)


class MediumChangesSerializer(StrictSerializer):
    read_only_fields = ("id", "url", "kind", "mime_type", "width", "height", "bytes", "created_at", "variants")

    alt_text = StrictCharField(allow_blank=True, max_length=ALT_TEXT_MAX_LENGTH)


PERMISSION_DENIED = error(
    "The key lacks the endpoint's scope, or its owner lacks `articles.write`; the message names it.",
    "insufficient_scope",
    "permission_denied",
)
IN_USE = error(
    "A published or scheduled post shows the medium; `details.posts` lists them (`id`, `channel_id`, `title`, "
    "`publication_status`).",
    "in_use",
)
STORE_UNAVAILABLE = error(
    "The media store (the local folder or the S3-compatible store) did not take the file: nothing was stored; "
    "retry later (with the same `Idempotency-Key`).",
    "store_unavailable",
)
TOO_LARGE = error("The request body is larger than MEDIA_MAX_BYTES and the multipart framing.", "payload_too_large")


def _one(request, medium) -> Response:
    return Response({"data": MediumSerializer(medium_rows([medium])[0]).data})


class MediaView(APIView):
    required_scopes = {"GET": Scope.READ_MEDIA, "POST": Scope.WRITE_MEDIA}
    pagination_class = PagePagination

    def get_parsers(self):
        # Only the upload reads a body, and only as multipart/form-data; every other endpoint keeps JSON.
        return [MultiPartParser()]

    @extend_schema(
        operation_id="media_list",
        summary="List the account's media",
        description="Scope `read:media`. Newest first. `search` finds words of the file names and alt texts. "
        "Paginated with `page` and `per_page` (or `limit`).",
        parameters=[OpenApiParameter("search", str, description="Words of the file name or alt text.")],
        responses={200: MediumSerializer(many=True), **common_errors(bad_request=True)},
        tags=["media"],
    )
    def get(self, request):
        media = media_of_account(account_id=request.auth.account_id, search=request.query_params.get("search", ""))
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(media, request, view=self)
        return paginator.get_paginated_response(MediumSerializer(medium_rows(page), many=True).data)

    @extend_schema(
        operation_id="media_create",
        summary="Upload an image",
        description="Scope `write:media`; the key's owner needs `articles.write`. A `multipart/form-data` body with "
        "the image in `file` and an optional `alt_text`, up to MEDIA_MAX_BYTES (20 MB by default; larger: 413). "
        "Only PNG, JPEG, GIF, WebP and AVIF are taken, decided from the content (never the name or declared "
        "type); anything else, a file that also carries markup, a truncated file or one of more than "
        "MEDIA_MAX_PIXELS pixels is refused with 400 (`details.field` `file`, `rule` `unsupported_type`, "
        "`markup`, `corrupt`, `too_many_pixels`, `too_large`, `empty`). EXIF (with any GPS position), XMP and "
        "comments are stripped, the orientation applied, the colour profile kept. The image is stored before "
        "the answer; its smaller copies (`variants`) follow from the worker.",
        request={"multipart/form-data": UploadSerializer},
        responses={
            201: MediumResponseSerializer,
            **common_errors(bad_request=True),
            403: PERMISSION_DENIED,
            413: TOO_LARGE,
            503: STORE_UNAVAILABLE,
        },
        tags=["media"],
    )
    @idempotent
    def post(self, request):
        require_permission(request.user, Permission.ARTICLES_WRITE)
        fields = UploadSerializer(data=request.data)
        fields.is_valid(raise_exception=True)
        upload, alt_text = fields.validated_data["file"], fields.validated_data.get("alt_text", "")
        medium = medium_upload(
            account_id=request.auth.account_id,
            file=upload,
            size=upload.size,
            original_name=upload.name or "",
            alt_text=alt_text,
            uploaded_by_id=request.user.pk,
        )
        response = _one(request, medium)
        response.status_code = status.HTTP_201_CREATED
        response["Location"] = request.build_absolute_uri(f"/v1/media/{medium.pk}")
        return response


class MediumView(APIView):
    required_scopes = {"GET": Scope.READ_MEDIA, "PATCH": Scope.WRITE_MEDIA, "DELETE": Scope.WRITE_MEDIA}

    @extend_schema(
        operation_id="media_retrieve",
        summary="Get a medium",
        description="Scope `read:media`. Another account's medium answers 404, like an unknown id.",
        responses={200: MediumResponseSerializer, **common_errors(not_found=True)},
        tags=["media"],
    )
    def get(self, request, id: int):
        return _one(request, medium_get(account_id=request.auth.account_id, medium_id=id))

    @extend_schema(
        operation_id="media_partial_update",
        summary="Change a medium's alt text",
        description="Scope `write:media`; the key's owner needs `articles.write`. Only `alt_text` can change.",
        request=MediumChangesSerializer,
        responses={
            200: MediumResponseSerializer,
            **common_errors(not_found=True, bad_request=True),
            403: PERMISSION_DENIED,
        },
        tags=["media"],
    )
    @idempotent
    def patch(self, request, id: int):
        require_permission(request.user, Permission.ARTICLES_WRITE)
        changes = MediumChangesSerializer(data=request.data)
        changes.is_valid(raise_exception=True)
        medium = medium_update(
            account_id=request.auth.account_id, medium_id=id, alt_text=changes.validated_data["alt_text"]
        )
        return _one(request, medium)

    @extend_schema(
        operation_id="media_destroy",
        summary="Delete a medium",
        description="Scope `write:media`; the key's owner needs `articles.write`. 409 `in_use` while a published, "
        "scheduled or pending post shows it (`details.posts` lists them); drafts that attached it lose the "
        "attachment. The file goes once no other medium has the same bytes.",
        responses={
            204: None,
            **common_errors(not_found=True),
            403: PERMISSION_DENIED,
            409: IN_USE,
        },
        tags=["media"],
    )
    @idempotent
    def delete(self, request, id: int):
        require_permission(request.user, Permission.ARTICLES_WRITE)
        medium_delete(account_id=request.auth.account_id, medium_id=id)
        return Response(status=status.HTTP_204_NO_CONTENT)
