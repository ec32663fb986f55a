"""The rules of a story's input that its posts' own rules do not cover: a time for a schedule (and
only for one), channels of the account each once, overrides of the overridable fields, media of the
account's library or the web."""

from collections.abc import Sequence
from datetime import datetime

from django.core.exceptions import ValidationError
from django.utils import timezone

from apps.channels.models import Channel
from apps.core.keep import Keep
from apps.core.validation import field_error
from apps.media.selectors import media_of_account
from apps.posts.models import http_url_validator
from apps.stories.models import OVERRIDABLE, Story, StoryStatus

_S = StoryStatus
# The largest id a row can have (a 64-bit key).
LAST_ID = 2**63 - 1


def storable(ids) -> list[int]:
    """The ids a row may have: an `IN` over an id beyond the key's range fails in SQLite (not found
    is the answer for those)."""
    return [value for value in ids if 0 < value <= LAST_ID]


def check_schedule(
    status: str, scheduled_at: datetime | None, *, current: Story | None, allow_past: bool = False
) -> None:
    if status not in _S.values:
        raise field_error("publication_status", "invalid_choice", f"Unknown status {status!r}.")
    if status != _S.SCHEDULED:
        if scheduled_at is not None:
            raise field_error(
                "scheduled_at",
                "only_when_scheduled",
                "Only a scheduled story has a publication time: send publication_status scheduled with it "
                "(planned_for notes a plan that publishes nothing).",
            )
        return
    if scheduled_at is None:
        raise field_error("scheduled_at", "required", "A scheduled story needs the time it is scheduled for.")
    unchanged = current is not None and current.publication_status == status and current.scheduled_at == scheduled_at
    if not unchanged and not allow_past and scheduled_at <= timezone.now():
        raise field_error(
            "scheduled_at",
            "future",
            f"{scheduled_at:%Y-%m-%d %H:%M} UTC is in the past: pick a future time, or publish the story now.",
        )


def channels_of(account_id: int, choices: Sequence) -> dict[int, Channel]:
    found = Channel.objects.filter(account_id=account_id, pk__in=storable([choice.id for choice in choices])).in_bulk()
    seen = set()
    for position, choice in enumerate(choices):
        if choice.id not in found:
            raise field_error(f"channels[{position}].id", "not_found", f"No channel {choice.id} in this account.")
        if choice.id in seen:
            raise field_error(f"channels[{position}].id", "duplicate", f"Channel {choice.id} is listed twice.")
        seen.add(choice.id)
        if not isinstance(choice.overrides, Keep):
            check_overrides(position, choice.overrides)
    return found


def check_overrides(position: int, overrides: dict) -> None:
    for name, value in overrides.items():
        if name not in OVERRIDABLE:
            raise field_error(
                f"channels[{position}].overrides.{name}",
                "unknown_field",
                f"{name!r} cannot be overridden; a channel overrides {', '.join(OVERRIDABLE)}.",
            )
        if value is not None and not isinstance(value, str):
            raise field_error(f"channels[{position}].overrides.{name}", "invalid", "An override is a text.")


def check_media(account_id: int, media: list[dict]) -> None:
    """The story's media as its posts will take them: uploads of this account, web addresses."""
    if not media:
        return
    wanted = {item["medium"]: position for position, item in enumerate(media) if item.get("medium") is not None}
    known = set(media_of_account(account_id=account_id).filter(pk__in=storable(wanted)).values_list("pk", flat=True))
    for medium, position in wanted.items():
        if medium not in known:
            raise field_error(
                f"media[{position}].medium", "not_found", f"No medium {medium} in this account's media library."
            )
    for position, item in enumerate(media):
        if item.get("medium") is None:
            try:
                http_url_validator(item.get("url", ""))
            except ValidationError:
                raise field_error(f"media[{position}].url", "invalid", "Enter an http(s) address.") from None
