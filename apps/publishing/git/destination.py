"""The git destination: each post is one Markdown file with YAML front matter, each job one commit
on top of the branch's head, pushed without force.

Every action is safe to repeat: a file that already holds what the job would write is not committed
again, so a job whose outcome was unknown (the push sent, the answer lost) finds its work done.
"""

import re
import time
from dataclasses import replace
from datetime import UTC, datetime

import yaml
from django.conf import settings

from apps.core import crypto
from apps.core.destinations import EVERY_ACTION, DestinationKind, Document, JobContext, Outcome, PublishError
from apps.publishing.git import cache, media, paths, repository
from apps.publishing.git.failures import describe_failure, did_not_answer
from apps.publishing.git.models import PLATFORM, GitDestination
from apps.publishing.git.remote import Credentials, parse_remote
from apps.publishing.git.templates import check_path_template, fill_template, template_placeholders
from apps.publishing.models import JobAction

MESSAGE_VERBS = {JobAction.PUBLISH: "Publish", JobAction.UPDATE: "Update", JobAction.UNPUBLISH: "Unpublish"}


class RefusedPath(PublishError):
    """The path a template makes for one post has a part git refuses (its slug made it so)."""


def render_template(template: str, *, slug: str, post_id: int, date: datetime) -> str:
    check_path_template(template)
    path = fill_template(template, slug=slug, post_id=post_id, date=date)
    refused = paths.path_problem(path)
    if refused is not None:
        element, problem = refused
        raise RefusedPath(
            f"This post's path {path!r} (the path template {template.strip()!r} with the post's slug, id and date) has "
            f"a part git refuses, {element!r}: {problem}. Nothing was committed: give the post another slug, or "
            "change the channel's path template.",
            permanent=True,
        )
    return path


def front_matter(document: Document, *, draft: bool, images: list[str] | None = None) -> dict:
    matter = {"title": document.title, "date": _second(document.published_at)}
    if document.updated_at is not None:
        matter["lastmod"] = _second(document.updated_at)
    matter["slug"] = document.slug
    matter["tags"] = list(document.tags)
    if document.description:
        matter["description"] = document.description
    if images:
        matter["images"] = images  # the post's own images, where Hugo's OpenGraph and others read them
    matter["draft"] = draft
    matter["id"] = document.post_id
    return matter


def _second(value: datetime) -> datetime:
    return value.astimezone(UTC).replace(microsecond=0)


def render_file(document: Document, *, draft: bool = False, images: list[media.SiteImage] | None = None) -> bytes:
    """The post's file: YAML front matter written by the YAML library (any title round-trips), then
    the body as it is, its uploaded images addressed where the site serves them."""
    images = images or []
    matter = front_matter(document, draft=draft, images=media.attached_urls(images))
    matter = yaml.safe_dump(matter, allow_unicode=True, sort_keys=False, width=10**6)
    body = media.rewrite_body(document.body, images)
    body = body if body.endswith("\n") or not body else body + "\n"
    return f"---\n{matter}---\n\n{body}".encode()


def file_matter(content: bytes) -> dict:
    """A file's front matter ({} when it has none that reads as YAML)."""
    text = content.decode("utf-8", "replace")
    if not text.startswith("---\n"):
        return {}
    end = text.find("\n---\n", 3)
    if end < 0:
        return {}
    try:
        matter = yaml.safe_load(text[4:end])
    except yaml.YAMLError:
        return {}
    return matter if isinstance(matter, dict) else {}


def file_post_id(content: bytes) -> int | None:
    """The post id in a file's front matter (None: not a file this service wrote)."""
    value = file_matter(content).get("id")
    return value if isinstance(value, int) else None


def file_date(content: bytes) -> datetime | None:
    """The publication date in a file's front matter (UTC when it names no zone)."""
    value = file_matter(content).get("date")
    if not isinstance(value, datetime):
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def commit_message(verb: str, title: str, *, post_id: int, job_id: int) -> str:
    subject = " ".join(title.split())
    return f"{verb} “{subject}”\n\nPost-Id: {post_id}\nPublication-Job-Id: {job_id}\n"


class GitPublisher:
    def __init__(self, destination: GitDestination) -> None:
        self.setup = destination
        self.remote = parse_remote(destination.repository_url)
        self.credentials = Credentials(
            token=destination.token(),
            token_username=destination.token_username,
            ssh_key=destination.ssh_key(),
            known_hosts=destination.known_hosts,
        )

    def _author(self) -> bytes:
        name = " ".join(self.setup.author_name.replace("<", "").replace(">", "").split()) or "Content Publishing"
        return f"{name} <{self.setup.author_email}>".encode()

    def _url(self, document: Document) -> str:
        if not self.setup.post_url_template:
            return ""
        template_placeholders(self.setup.post_url_template, "post URL template")
        return fill_template(
            self.setup.post_url_template, slug=document.slug, post_id=document.post_id, date=document.published_at
        )

    def _timeout(self, job: JobContext) -> float:
        remaining = job.deadline - time.monotonic()
        if remaining <= 0:
            raise PublishError(did_not_answer())
        return remaining

    def _connect(self, job: JobContext):
        return repository.connect(self.remote, self.credentials, timeout=self._timeout(job))

    def _change(self, job: JobContext, plan) -> Outcome:
        """Fetch, ask `plan(repo, head)` for (changes, outcome path, message), commit and push;
        again from a fresh fetch when the branch moved meanwhile."""
        branch = self.setup.branch
        try:
            with cache.cached_copy(self.remote.url) as repo:
                while True:
                    with self._connect(job) as (client, path):
                        head = repository.fetch_head(client, path, repo, branch)
                        changes, kept_path, message = plan(repo, head.commit)
                        # A later attempt whose earlier one pushed (its outcome unrecorded: a
                        # crash, a lost answer) finds its commit, even under later jobs' changes
                        # to the same file: the job is never committed twice.
                        own = repository.commit_of_job(repo, head.commit, job.job_id) if job.attempt > 1 else None
                        if own is not None or not changes:
                            commit = own or head.commit
                            return Outcome(reference=commit.decode() if commit else "", path=kept_path)
                        try:
                            commit = repository.commit_and_push(
                                client,
                                path,
                                repo,
                                branch=branch,
                                parent=head.commit,
                                changes=changes,
                                message=message,
                                author=self._author(),
                            )
                        except repository.BranchMoved:
                            self._timeout(job)
                            continue
                        return Outcome(reference=commit.decode(), path=kept_path)
        except Exception as exc:
            raise describe_failure(exc, self.remote, branch) from exc

    def publish(self, job: JobContext, document: Document) -> Outcome:
        target = render_template(
            self.setup.path_template, slug=document.slug, post_id=document.post_id, date=document.published_at
        )
        images = self._images(document)
        content = render_file(document, images=images)
        verb = MESSAGE_VERBS[JobAction(job.action)]
        read = media.Reader()  # each image read once, though the branch moving makes the commit again

        def plan(repo, head):
            existing = repository.read_file(repo, head, target)
            if existing is not None and existing != content and file_post_id(existing) != document.post_id:
                raise PublishError(
                    f"{target} already holds another file (of post {file_post_id(existing) or 'unknown'}); it is "
                    "never overwritten: give this post another slug, or change the channel's path template.",
                    permanent=True,
                )
            changes: dict[str, bytes | None] = {}
            if existing != content:
                changes[target] = content
            old = job.previous_path
            if old and old != target and repository.read_file(repo, head, old) is not None:
                old_content = repository.read_file(repo, head, old)
                if file_post_id(old_content) == document.post_id:
                    changes[old] = None  # the slug changed: the file moves, in the same commit
            changes |= media.image_changes(images, lambda path: repository.has_file(repo, head, path), read)
            return changes, target, commit_message(verb, document.title, post_id=document.post_id, job_id=job.job_id)

        return self._with_url(self._change(job, plan), document)

    def _images(self, document: Document) -> list[media.SiteImage]:
        return media.site_images(document, media_path=self.setup.media_path, media_url=self.setup.media_url)

    def _with_url(self, outcome: Outcome, document: Document) -> Outcome:
        return Outcome(reference=outcome.reference, path=outcome.path, url=self._url(document))

    def unpublish(self, job: JobContext, document: Document | None) -> Outcome:
        post_id = job.post_id

        def plan(repo, head):
            target = job.previous_path
            if not target and document is not None:
                try:
                    target = render_template(
                        self.setup.path_template,
                        slug=document.slug,
                        post_id=document.post_id,
                        date=document.published_at,
                    )
                except RefusedPath:
                    return {}, "", ""  # never committed there: git refuses that path
            existing = repository.read_file(repo, head, target) if target else None
            if existing is None or file_post_id(existing) != post_id:
                return {}, "", ""  # no file of this post there (gone, or another's): nothing to take down
            message = commit_message("Unpublish", job.title, post_id=post_id, job_id=job.job_id)
            if self.setup.unpublish_keeps_file and document is not None:
                # The draft keeps the date it was published with: taking it down is not a new date.
                dated = replace(document, published_at=file_date(existing) or document.published_at)
                draft = render_file(dated, draft=True, images=self._images(document))
                return ({target: draft} if draft != existing else {}), target, message
            return {target: None}, "", message

        return self._change(job, plan)

    def check(self) -> str:
        """Reach the repository and describe the branch's head."""
        deadline = time.monotonic() + settings.PUBLISH_TIMEOUT
        context = JobContext(job_id=0, post_id=0, action="check", title="", previous_path="", deadline=deadline)
        try:
            with cache.cached_copy(self.remote.url) as repo, self._connect(context) as (client, path):
                head = repository.fetch_head(client, path, repo, self.setup.branch)
                if head.commit is None:
                    return (
                        f"Connected to {self.remote.url}: the repository is empty; the first publication "
                        f"creates the branch {self.setup.branch!r}."
                    )
                commit = repo[head.commit]
                subject = commit.message.decode("utf-8", "replace").splitlines()[0] if commit.message else ""
                when = datetime.fromtimestamp(commit.commit_time, tz=UTC)
                return (
                    f"Connected to {self.remote.url}: branch {self.setup.branch!r} is at "
                    f"{head.commit.decode()[:12]} “{subject}” by {commit.author.decode('utf-8', 'replace')}, "
                    f"{when:%Y-%m-%d %H:%M} UTC."
                )
        except Exception as exc:
            raise describe_failure(exc, self.remote, self.setup.branch) from exc


def load(channel_id: int) -> GitPublisher | None:
    setup = GitDestination.objects.filter(channel_id=channel_id).first()
    if setup is None:
        return None
    try:
        return GitPublisher(setup)
    except crypto.CredentialUnreadable as exc:
        raise PublishError(str(exc), permanent=True) from None


# Where a git channel's repository is set up: the pages say it, and a job of a channel without one.
SET_UP_HERE = "This git channel has no repository set up: add one in Settings → Publishing: git → Git destinations"


def unready(channel_id: int) -> str:
    return "" if GitDestination.objects.filter(channel_id=channel_id).exists() else f"{SET_UP_HERE}."


COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def short_reference(reference: str) -> str:
    """A commit id as pages show it: its first 12 digits."""
    return reference[:12] if COMMIT.fullmatch(reference) else reference


def reference_url(job) -> str:
    """The commit's page, where the repository's set-up has a commit URL template."""
    setup = getattr(job.channel, "git_destination", None)
    return setup.commit_url(job.reference) if setup is not None and COMMIT.fullmatch(job.reference) else ""


KIND = DestinationKind(
    platform=PLATFORM,
    label="Git",
    load=load,
    missing=f"{SET_UP_HERE} (or with the connect_git command).",
    publishes=(
        "A commit to the repository: the post's file is committed to the channel's branch by its job, and the post "
        "is published once the push has gone through."
    ),
    reference="commit",
    unready=unready,
    short_reference=short_reference,
    reference_url=reference_url,
    job_related=("channel__git_destination",),
    admin="apps.publishing.git.admin",
    # Where a channel publishes, with its credentials: the account's settings.
    access={"system.settings": {"publishing_git.gitdestination": EVERY_ACTION}},
)
