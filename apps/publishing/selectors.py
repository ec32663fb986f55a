from collections import namedtuple
from collections.abc import Iterable

from django.db.models import Max
from django.utils.html import format_html

from apps.core.destinations import Recipients, kind_for, kinds
from apps.publishing.models import PublicationJob

# A post's publication as the API shows it: its latest job (blank texts as null), and, for a
# destination that mails its posts, the counts of its recipients (null for any other post).
Publication = namedtuple("Publication", "id action state attempts last_error reference url updated_at recipients")


def recipients_of(post_ids: Iterable[int]) -> dict[int, Recipients]:
    """The recipient counts of the posts that destinations mail, by post id (one query per
    destination that mails posts)."""
    post_ids = list(post_ids)
    found: dict[int, Recipients] = {}
    for kind in kinds():
        if kind.recipients is not None:
            found.update(kind.recipients(post_ids))
    return found


def job_related() -> tuple[str, ...]:
    """What a job's row reads of its channel to show its reference (select_related paths)."""
    return ("channel", *(path for kind in kinds() for path in kind.job_related))


def publication_row(job: PublicationJob) -> Publication:
    return Publication(
        job.pk,
        job.action,
        job.state,
        job.attempts,
        job.last_error or None,
        job.reference or None,
        job.url or None,
        job.updated_at,
        recipients_of([job.post_id]).get(job.post_id),
    )


def latest_publications(post_ids: Iterable[int]) -> dict[int, Publication]:
    """The latest job of each of the posts that have one, by post id (the jobs, and the
    recipients of the posts destinations mail: one query per such destination)."""
    post_ids = list(post_ids)
    latest = PublicationJob.objects.filter(post_id__in=post_ids).values("post_id").annotate(last=Max("id"))
    jobs = PublicationJob.objects.filter(id__in=latest.values("last")).values_list(
        "post_id", "id", "action", "state", "attempts", "last_error", "reference", "url", "updated_at"
    )
    recipients = recipients_of(post_ids)
    found = {}
    for post_id, job_id, action, state, attempts, error, reference, url, updated in jobs:
        found[post_id] = Publication(
            job_id,
            action,
            state,
            attempts,
            error or None,
            reference or None,
            url or None,
            updated,
            recipients.get(post_id),
        )
    return found


def reference_kind(job: PublicationJob) -> str:
    """What the job's reference names, in its destination's words (a commit, a social post, an
    edition), whether or not the job has one yet."""
    kind = kind_for(job.channel.platform)
    return kind.reference if kind is not None else "reference"


def reference_link(job: PublicationJob) -> str:
    """The job's reference as its destination shows it (a commit id shortened), linked to its page
    where the destination gives one, or to the published post (HTML, for the Settings area's pages)."""
    if not job.reference:
        return "—"
    kind = kind_for(job.channel.platform)
    shown = kind.short_reference(job.reference) if kind is not None else job.reference
    url = (kind.reference_url(job) if kind is not None else "") or (job.url if shown == job.reference else "")
    return format_html('<a href="{}">{}</a>', url, shown) if url else shown
