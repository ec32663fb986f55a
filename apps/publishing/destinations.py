"""The one small interface every publishing destination implements, and the registries that tie
the pipeline to its destinations and to what it publishes.

A destination (git, LinkedIn...) is one module that registers a `DestinationKind` for its
platform from its AppConfig.ready(): how to load a channel's set-up, the sentence that says what
to set up when a channel has none, and its own words for the pages (what publishing a post there
does, what its reference for a job names, why a channel cannot publish yet). Adding one changes
nothing here, in the pipeline nor in the pages that publish posts: they ask the destination.

The pipeline publishes posts without importing the posts app (which sits above it and writes
its jobs): the posts app registers the `Subject` that turns a job into the document to publish and
hears the outcome, in the transaction that records it.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol


class PublishError(Exception):
    """A job's attempt did not go through. `message` is a sentence a user can act on; `permanent`
    errors (refused credentials, a missing branch, a bad template) fail the job at once, the others
    are retried on the schedule, not before `retry_after` seconds where the destination asked for a
    pause (an HTTP Retry-After)."""

    def __init__(self, message: str, *, permanent: bool = False, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.permanent = permanent
        self.retry_after = retry_after


class InProgress(Exception):
    """The destination is carrying the job out and has more to do (a newsletter edition still has
    recipients to mail): the job goes back to the head of its channel's queue, due again after
    `retry_after` seconds, and the attempt is not counted. `message` says how far it got."""

    def __init__(self, message: str = "", *, retry_after: float = 0) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after


@dataclass(frozen=True)
class Document:
    """A post as a destination writes it."""

    post_id: int
    title: str
    slug: str
    body: str
    published_at: datetime
    tags: list[str] = field(default_factory=list)
    description: str | None = None
    teaser: str = ""
    # Set on updates: the time of the change (Hugo's `lastmod`).
    updated_at: datetime | None = None
    # Where readers find the post's page on the account's blog, if it has one (a LinkedIn share links to it).
    link: str | None = None


@dataclass(frozen=True)
class Outcome:
    """What a destination confirms: its reference for the result (git: the commit), where the
    post now lives in it (git: the file's path; empty once removed) and its web address, if any."""

    reference: str = ""
    path: str = ""
    url: str = ""


@dataclass(frozen=True)
class JobContext:
    """What a destination knows of the job it carries out."""

    job_id: int
    post_id: int
    action: str
    title: str
    # Where the post lived after its last successful job (empty: nowhere yet, or removed).
    previous_path: str
    deadline: float  # time.monotonic() after which no new operation is started


class Destination(Protocol):
    def publish(self, job: JobContext, document: Document) -> Outcome:
        """Put the post there (a first publication or an update); safe to repeat."""

    def unpublish(self, job: JobContext, document: Document | None) -> Outcome:
        """Take the post down (`document` is None for a deleted post); safe to repeat."""

    def check(self) -> str:
        """Reach the destination and say what is there (the settings' "Test connection")."""


def _ready(channel_id: int) -> str:
    return ""


@dataclass(frozen=True)
class DestinationKind:
    platform: str
    # The channel's destination, or None when the channel has none set up.
    load: Callable[[int], Destination | None]
    # Said when a channel of this platform has no destination set up: what to set up, and where.
    missing: str
    # What publishing a post does there, as a sentence for the post's page ("Publish now").
    publishes: str = "The post is handed to its destination and is published once the destination confirms."
    # What the destination's reference for a job names ("commit", "LinkedIn post", "edition").
    reference: str = "reference"
    # Why the channel cannot publish now, as a sentence that says what to set up ("" when it can).
    # Read by the pages, so it looks at the stored set-up only: it reaches no remote service.
    unready: Callable[[int], str] = _ready


_kinds: dict[str, DestinationKind] = {}


def register(kind: DestinationKind) -> None:
    _kinds[kind.platform] = kind


def kind_for(platform: str) -> DestinationKind | None:
    """The destination registered for the platform (None: it publishes through none)."""
    return _kinds.get(platform)


def destination_for(*, channel_id: int, platform: str, platform_name: str) -> Destination:
    kind = _kinds.get(platform)
    if kind is None:
        raise PublishError(
            f"{platform_name} channels cannot publish on this server yet: no {platform_name} destination is installed.",
            permanent=True,
        )
    destination = kind.load(channel_id)
    if destination is None:
        raise PublishError(kind.missing, permanent=True)
    return destination


class Subject(Protocol):
    def document(self, *, post_id: int, action: str, published_at: datetime | None) -> Document | None:
        """The post as it is now, for a job; None when it no longer exists."""

    def confirmed(self, *, job) -> None:
        """The destination confirmed the job (called in the transaction that records it)."""

    def failed(self, *, job) -> None:
        """The job failed for good (called in the transaction that records it)."""


_subject: list[Subject] = []


def register_subject(subject: Subject) -> None:
    _subject[:] = [subject]


def subject() -> Subject:
    if not _subject:
        raise RuntimeError("no publishing subject registered (the posts app registers it when it is ready)")
    return _subject[0]
