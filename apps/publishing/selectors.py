import re
from collections import namedtuple
from collections.abc import Iterable

from django.db.models import Max
from django.utils.html import format_html

from apps.publishing.models import PublicationJob

COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")

# A post's publication as the API shows it: its latest job (blank texts as null).
Publication = namedtuple("Publication", "id action state attempts last_error reference url updated_at")


def publication_row(job: PublicationJob) -> Publication:
    return Publication(
        job.pk, job.action, job.state, job.attempts, job.last_error or None, job.reference or None, job.url or None,
        job.updated_at,
    )  # fmt: skip


def latest_publications(post_ids: Iterable[int]) -> dict[int, Publication]:
    """The latest job of each of the posts that have one, by post id (one query)."""
    latest = PublicationJob.objects.filter(post_id__in=list(post_ids)).values("post_id").annotate(last=Max("id"))
    jobs = PublicationJob.objects.filter(id__in=latest.values("last")).values_list(
        "post_id", "id", "action", "state", "attempts", "last_error", "reference", "url", "updated_at"
    )
    return {
        post_id: Publication(job_id, action, state, attempts, error or None, reference or None, url or None, updated)
        for post_id, job_id, action, state, attempts, error, reference, url, updated in jobs
    }


def reference_kind(job: PublicationJob) -> str:
    """What the job's reference names: a git commit, or (a LinkedIn URN) the post."""
    return "post" if job.reference.startswith("urn:") else "commit"


def reference_link(job: PublicationJob) -> str:
    """The job's reference (a commit), shortened and linked to its page where the channel's
    destination has a commit URL (HTML, for the Settings area's pages)."""
    if not job.reference:
        return "—"
    if reference_kind(job) != "commit":
        # Another destination's reference (a LinkedIn post's URN): whole, linked to the post.
        return format_html('<a href="{}">{}</a>', job.url, job.reference) if job.url else job.reference
    setup = getattr(job.channel, "git_destination", None)
    url = setup.commit_url(job.reference) if setup is not None else ""
    short = job.reference[:12]
    return format_html('<a href="{}">{}</a>', url, short) if url else short
