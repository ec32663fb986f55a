"""The content plan: scheduled posts whose time has come move on, in bounded batches.

Each batch is one transaction that locks its posts with `FOR UPDATE SKIP LOCKED`, moves them with
set-based UPDATEs and writes their events through the webhooks outbox. Two overlapping runs (a
slow run and the next beat, two beats by mistake) take disjoint batches, and a post that has
moved is no longer `scheduled`: each post moves once and its event is written once.
"""

import logging
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from apps.channels.models import Platform
from apps.posts.models import ApiPublication, Post, PublicationStatus
from apps.posts.payloads import posts_webhook_data
from apps.webhooks.models import EventKind
from apps.webhooks.services import EventInput, events_emit

logger = logging.getLogger(__name__)

BATCH_SIZE = 1000


@dataclass
class ContentPlanResult:
    publishing_pending: int = 0
    published: int = 0

    @property
    def moved(self) -> int:
        return self.publishing_pending + self.published


def _emit(kind: str, post_ids: list[int]) -> None:
    payloads = posts_webhook_data(post_ids)
    events_emit(
        kind=kind,
        items=[
            EventInput(account=post.channel.account, data={"post": data}, post_id=post.pk) for post, data in payloads
        ],
    )


@transaction.atomic
def _move_batch(*, now: datetime, batch_size: int) -> tuple[int, int]:
    due = list(
        Post.objects.select_for_update(skip_locked=True, of=("self",))
        .filter(publication_status=PublicationStatus.SCHEDULED, scheduled_at__lte=now)
        .order_by("scheduled_at", "id")
        .values_list("id", "channel__platform")[:batch_size]
    )
    external = [post_id for post_id, platform in due if platform == Platform.API]
    direct = [post_id for post_id, platform in due if platform != Platform.API]
    if external:
        Post.objects.filter(pk__in=external).update(
            publication_status=PublicationStatus.PUBLISHING_PENDING,
            published_at=None,
            external_id=None,
            external_url=None,
            updated_at=now,
        )
        # A post that was in the workflow before keeps its record, reset for the new round.
        ApiPublication.objects.bulk_create(
            [ApiPublication(post_id=post_id, created_at=now) for post_id in external],
            update_conflicts=True,
            unique_fields=["post"],
            update_fields=["confirmed_at", "external_id", "external_url"],
        )
        _emit(EventKind.POST_PUBLISHING_PENDING, external)
    if direct:
        Post.objects.filter(pk__in=direct).update(
            publication_status=PublicationStatus.PUBLISHED, published_at=now, updated_at=now
        )
        _emit(EventKind.POST_PUBLISHED, direct)
    return len(external), len(direct)


def content_plan_run(*, now: datetime | None = None, batch_size: int = BATCH_SIZE) -> ContentPlanResult:
    """Move every scheduled post whose `scheduled_at` has passed; return how many moved where."""
    now = now or timezone.now()
    result = ContentPlanResult()
    while True:
        pending, published = _move_batch(now=now, batch_size=batch_size)
        result.publishing_pending += pending
        result.published += published
        if pending + published < batch_size:
            break
    logger.info(
        "content plan run moved=%d publishing_pending=%d published=%d",
        result.moved,
        result.publishing_pending,
        result.published,
    )
    return result
