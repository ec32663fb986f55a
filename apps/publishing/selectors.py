import re
from collections import namedtuple
from collections.abc import Iterable

from django.db.models import Max
from django.utils.html import format_html

from apps.core.destinations import kind_for
from apps.publishing.models import PublicationJob
from apps.publishing.newsletter.models import Edition

COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")

# A post's publication as the API shows it: its latest job (blank texts as null), and for a
# newsletter edition the counts of its recipients (null for any other post).
Publication = namedtuple("Publication", "id action state attempts last_error reference url updated_at recipients")
# A newsletter edition's recipient counts (Edition.recipients()).
Recipients = namedtuple("Recipients", "total pending sent failed suppressed uncertain")
# Where a newsletter destination's reference names the post's edition (sending.py).
EDITION_PREFIX = "edition:"


def recipients_of(post_ids: Iterable[int]) -> dict[int, Recipients]:
    """The recipient counts of the posts' newsletter editions, by post id (one query; the counts
    are kept on the edition's row, so its cost does not grow with the audience)."""
    editions = Edition.objects.filter(post_id__in=list(post_ids)).only(
        "post_id", "total", "sent", "failed", "suppressed", "uncertain"
    )
    return {edition.post_id: Recipients(**edition.recipients()) for edition in editions}


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
    """The latest job of each of the posts that have one, by post id (two queries: the jobs, and
    the editions of newsletter posts)."""
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
    """What the job's reference names, in its destination's words (a commit, a LinkedIn post, an
    edition), whether or not the job has one yet."""
    kind = kind_for(job.channel.platform)
    return kind.reference if kind is not None else "reference"


def reference_link(job: PublicationJob) -> str:
    """The job's reference (a commit), shortened and linked to its page where the channel's
    destination has a commit URL (HTML, for the Settings area's pages)."""
    if not job.reference:
        return "—"
    if not COMMIT.fullmatch(job.reference):
        # Another destination's reference (a LinkedIn post's URN): whole, linked to the post.
        return format_html('<a href="{}">{}</a>', job.url, job.reference) if job.url else job.reference
    setup = getattr(job.channel, "git_destination", None)
    url = setup.commit_url(job.reference) if setup is not None else ""
    short = job.reference[:12]
    return format_html('<a href="{}">{}</a>', url, short) if url else short
