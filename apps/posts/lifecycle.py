"""A post's lifecycle, the base every change of its state stands on: its states and the one place
that says which fields each state sets (state_values), and the steps every change takes alike: lock
the post's row, validate the fields it sets, write its event in the change's transaction, ask the
channel's destination for a job.

The changes themselves are in the modules beside this one, by who makes them: services.py (a post's
content), editor_status.py (editors' status changes), api_workflow.py (the external system's
confirm and revert on `api` channels), pipeline_subject.py (a destination's jobs' outcomes),
content_plan.py (scheduled posts whose time has come, in batches)."""

from collections.abc import Iterable, Sequence
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import models, transaction

from apps.core.errors import NotFound
from apps.core.keep import KEEP, Keep
from apps.core.lookups import any_of_sql
from apps.core.prepared import PreparedLookup
from apps.core.validation import invalid_from_django
from apps.posts.models import POST_STATE_FIELDS, ApiPublication, Post, PublicationStatus
from apps.posts.outcomes import moved
from apps.posts.serializers import post_webhook_data
from apps.publishing.models import JobState, PublicationJob
from apps.publishing.services import job_enqueue
from apps.webhooks.services import event_emit

POST_NOT_FOUND = "Post not found."


def validate_fields(
    instance: models.Model, fields: Iterable[str], prefix: str = "", *, constraints: bool = True
) -> None:
    """Run the model's own field validators and constraints on `fields` only (`constraints=False`:
    the caller keeps them, saving the query each takes)."""
    names = set(fields)
    exclude = [field.name for field in instance._meta.fields if field.name not in names]
    try:
        instance.full_clean(exclude=exclude, validate_constraints=constraints)
    except ValidationError as exc:
        raise invalid_from_django(exc, prefix) from None


def state_values(status: str, *, at: datetime | None = None, external_id=None, external_url=None) -> dict:
    """Every field that belongs to the state `status`, so no stale published_at or external
    reference survives a change of state (`at`: the publication time of `published`)."""
    published = status == PublicationStatus.PUBLISHED
    return {
        "publication_status": status,
        "published_at": at if published else None,
        "external_id": external_id if published else None,
        "external_url": external_url if published else None,
    }


def put_state(post: Post, status: str, *, scheduled_at: datetime | Keep | None = KEEP, **state) -> None:
    """Put the post in `status` (state_values), its schedule too where given, and save that."""
    for name, value in state_values(status, **state).items():
        setattr(post, name, value)
    if not isinstance(scheduled_at, Keep):
        post.scheduled_at = scheduled_at
    post.save(update_fields=POST_STATE_FIELDS)
    moved([post.pk])


def put_values(status: str, *, now: datetime, scheduled_at: datetime | Keep | None = KEEP) -> dict:
    """The fields posts_put writes: those of the state `status` (state_values) and the time of the change."""
    values = state_values(status, at=now) | {"updated_at": now}
    if not isinstance(scheduled_at, Keep):
        values["scheduled_at"] = scheduled_at
    return values


def posts_put(
    *, post_ids: Sequence[int], status: str, now: datetime, scheduled_at: datetime | Keep | None = KEEP
) -> int:
    """Put many posts in `status` in one statement (the content plan's batches, demo data); the
    caller writes their events. Returns how many rows were written."""
    values = put_values(status, now=now, scheduled_at=scheduled_at)
    with transaction.get_connection().cursor() as cursor:
        cursor.execute(*posts_put_statement(post_ids=post_ids, values=values))
        written = cursor.rowcount
    moved(post_ids)
    return written


def posts_put_statement(*, post_ids: Sequence[int], values: dict) -> tuple[str, list]:
    """posts_put's UPDATE (`values`: put_values) as SQL, for posts_put and for a caller that sends it
    without waiting for it (the content plan), which then calls `moved(post_ids)` itself and writes
    the API publication records of posts handed over (api_records_statement)."""
    connection = transaction.get_connection()
    condition, params = any_of_sql("id", [int(pk) for pk in post_ids], connection.vendor)
    fields = [Post._meta.get_field(name) for name in values]
    assignments = ", ".join(f"{connection.ops.quote_name(field.column)} = %s" for field in fields)
    prepared = [field.get_db_prep_save(values[field.name], connection) for field in fields]
    table = connection.ops.quote_name(Post._meta.db_table)
    return f"UPDATE {table} SET {assignments} WHERE {condition}", [*prepared, *params]  # noqa: S608 - the model's own names


def api_records_statement(*, post_ids: Sequence[int], now: datetime) -> tuple[str, list]:
    """The API publication records of `api` posts handed to the external system (the content
    plan's), in one statement from the posts' ids; a post that was in the workflow before keeps its
    record, reset. bulk_create built a model instance and prepared five values for each record, a
    twentieth of a content plan run."""
    connection = transaction.get_connection()
    condition, params = any_of_sql("id", [int(pk) for pk in post_ids], connection.vendor)
    records, posts = ApiPublication._meta.db_table, Post._meta.db_table
    return (
        f"INSERT INTO {records} (post_id, created_at, confirmed_at, external_id, external_url) "  # noqa: S608 - the models' own tables
        f"SELECT id, %s, NULL, NULL, NULL FROM {posts} WHERE {condition} "
        "ON CONFLICT (post_id) DO UPDATE SET confirmed_at = NULL, external_id = NULL, external_url = NULL",
        [now, *params],
    )


# Compiled once per process: every change of a post starts here, and compiling this join cost more
# CPU than running it.
_locked_post = PreparedLookup(
    Post,
    "id",
    (1, 2),
    lambda pk: (
        Post.objects.select_for_update(of=("self",))
        .select_related("channel__account", "channel__team")
        .filter(pk=pk)
        .order_by()[:1]
    ),
)


def locked_post_or_none(post_id: int) -> Post | None:
    """The post with its row locked, and its channel in the form its events show (with its account
    and team), read in the same query: emit renders the event from it without reading it again.
    Runs in the caller's transaction."""
    return _locked_post.first(post_id)


def locked_post(post_id: int) -> Post:
    post = locked_post_or_none(post_id)
    if post is None:
        raise NotFound(POST_NOT_FOUND)
    return post


def emit(kind: str, post: Post) -> None:
    """Write the post's event in the transaction of the change it reports (the webhooks outbox).
    `post` is a locked one (locked_post): its channel, read with the lock, is the event's."""
    data = post_webhook_data(post, channel=post.channel)
    event_emit(account=post.channel.account, kind=kind, data={"post": data}, post_id=post.pk)


def request_job(post: Post, action: str) -> None:
    """Ask the channel's destination for `action` on the post (a job, run after commit)."""
    job_enqueue(channel_id=post.channel_id, post_id=post.pk, title=post.title, action=action)


def publication_under_way(post_id: int, actions: list[str]) -> bool:
    """A job of these actions running, or tried and waiting for its retry: what it sent may be out
    there (its answer lost), so taking the post back asks for an unpublish too."""
    return (
        PublicationJob.objects.filter(post_id=post_id, action__in=actions)
        .filter(models.Q(state=JobState.RUNNING) | models.Q(state=JobState.QUEUED, attempts__gt=0))
        .exists()
    )
