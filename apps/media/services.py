"""Every change of the media library: an upload stored, its alt text changed, a medium deleted, its
responsive copies recorded. Each runs in one transaction; the file is in the store before the row
that names it commits, so an answered upload is never lost."""

import logging
from collections.abc import Callable
from typing import BinaryIO

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction
from django.utils import timezone

from apps.core.errors import Conflict, Unavailable
from apps.core.validation import field_error
from apps.media.models import ALT_TEXT_MAX_LENGTH, ORIGINAL_NAME_MAX_LENGTH, Medium
from apps.media.processing import Refused, process
from apps.media.selectors import medium_get, names_of_files
from apps.media.storage import media_storage

logger = logging.getLogger(__name__)

# medium id -> [{"id", "title", ...}] of what shows it and must keep it: the apps above the media
# library (the posts) register how to ask them, so it refuses to delete what a live page shows
# without importing them.
UsageCheck = Callable[[int], list[dict]]
_usage_checks: list[UsageCheck] = []


def register_usage(check: UsageCheck) -> None:
    if check not in _usage_checks:
        _usage_checks.append(check)


def users_of(medium_id: int) -> list[dict]:
    return [user for check in _usage_checks for user in check(medium_id)]


def _checked_alt_text(alt_text: str) -> str:
    alt_text = alt_text.strip()
    if len(alt_text) > ALT_TEXT_MAX_LENGTH:
        raise field_error(
            "alt_text", "max_length", f"Ensure this field has no more than {ALT_TEXT_MAX_LENGTH} characters."
        )
    return alt_text


def _store(name: str, data: bytes) -> None:
    storage = media_storage()
    try:
        if not storage.exists(name):
            storage.save(name, ContentFile(data))
    except Exception as exc:
        # Whatever the store raises (a full disk, an S3 endpoint down, refused credentials): the
        # upload is not taken, and the client is told to try again, never a 500.
        logger.exception("The media store refused %s", name)
        raise Unavailable(
            "The media store did not take the file; nothing was stored. Try again shortly.", code="store_unavailable"
        ) from exc


def medium_upload(
    *,
    account_id: int,
    file: BinaryIO,
    size: int,
    original_name: str = "",
    alt_text: str = "",
    uploaded_by_id: int | None = None,
) -> Medium:
    """Store an uploaded image (apps/media/processing.py decides what is taken) and add it to the
    account's library; its copies are made afterwards by the worker."""
    alt_text = _checked_alt_text(alt_text)
    if size > settings.MEDIA_MAX_BYTES:
        raise field_error(
            "file", "too_large", f"The file is larger than the limit of {settings.MEDIA_MAX_BYTES} bytes."
        )
    if size == 0:
        raise field_error("file", "empty", "The file is empty.")
    try:
        processed = process(file)
    except Refused as refused:
        raise field_error("file", refused.rule, refused.message) from refused
    # Stored outside the transaction: no row lock waits on the store.
    _store(processed.name, processed.data)
    with transaction.atomic():
        medium = Medium.objects.create(
            account_id=account_id,
            name=processed.name,
            original_name=original_name[-ORIGINAL_NAME_MAX_LENGTH:],
            mime_type=processed.mime_type,
            width=processed.width,
            height=processed.height,
            size=len(processed.data),
            frames=processed.frames,
            alt_text=alt_text,
            uploaded_by_id=uploaded_by_id,
        )
        transaction.on_commit(lambda: _request_variants(medium.pk))
    # A deletion of the last other medium with these bytes may have removed the file between the
    # store and the commit (medium_delete): the row now names it, so it is written again.
    _store(processed.name, processed.data)
    return medium


def _request_variants(medium_id: int) -> None:
    from apps.media.tasks import make_variants

    make_variants.delay(medium_id)


@transaction.atomic
def medium_update(*, account_id: int, medium_id: int, alt_text: str) -> Medium:
    medium = medium_get(account_id=account_id, medium_id=medium_id)
    medium = Medium.objects.select_for_update().get(pk=medium.pk)
    alt_text = _checked_alt_text(alt_text)
    if medium.alt_text != alt_text:
        medium.alt_text = alt_text
        medium.save(update_fields=["alt_text", "updated_at"])
    return medium


@transaction.atomic
def medium_delete(*, account_id: int, medium_id: int) -> None:
    """Delete a medium no live post shows (Conflict `in_use`, listing them, otherwise). Drafts that
    attached it lose the attachment. Its files go once no other medium has the same bytes."""
    medium = medium_get(account_id=account_id, medium_id=medium_id)
    medium = Medium.objects.select_for_update().get(pk=medium.pk)
    users = users_of(medium.pk)
    if users:
        titles = ", ".join(f"{user['title']!r} ({user['id']})" for user in users[:5])
        raise Conflict(
            f"The medium is shown by posts that are published or about to be: {titles}. Remove it from them first.",
            code="in_use",
            details={"posts": users},
        )
    files = names_of_files(medium)
    name = medium.name
    medium.delete()
    transaction.on_commit(lambda: _delete_files_unused(name, files))


def _delete_files_unused(name: str, files: list[str]) -> None:
    if Medium.objects.filter(name=name).exists():
        return
    storage = media_storage()
    for file in files:
        storage.delete(file)


@transaction.atomic
def medium_record_variants(*, medium_id: int, variants: list[dict]) -> bool:
    """Record the copies the worker made (whole files already in the store); False when the medium
    is gone or its copies were recorded by another run."""
    medium = Medium.objects.select_for_update().filter(pk=medium_id).first()
    if medium is None or medium.variants_made_at is not None:
        return False
    medium.variants = variants
    medium.variants_made_at = timezone.now()
    medium.save(update_fields=["variants", "variants_made_at"])
    return True
