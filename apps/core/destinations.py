"""The one small interface every publishing destination implements, and the registries that tie
the pipeline to its destinations and to what it publishes.

A destination is one package under apps/publishing/ that registers a `DestinationKind` for its
platform from its AppConfig.ready(): its platform's name, how to load a channel's set-up, the
sentence that says what to set up when a channel has none, its own words for the pages (what
publishing a post there does, what its reference for a job names, why a channel cannot publish
yet), its Settings-area module, its public pages and what each permission allows on its models.
Adding one is adding its package and its line in INSTALLED_APPS (docs/publishing.md, "Adding a
destination"): the channels, the pipeline, the pages and the API ask the registry.

The pipeline publishes posts without importing the posts app (which sits above it and writes
its jobs): the posts app registers the `Subject` that turns a job into the document to publish and
hears the outcome, in the transaction that records it.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple, Protocol


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
    """The destination is carrying the job out and has more to do (an edition still has
    recipients to mail): the job goes back to the head of its channel's queue, due again after
    `retry_after` seconds, and the attempt is not counted. `message` says how far it got."""

    def __init__(self, message: str = "", *, retry_after: float = 0) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after


@dataclass(frozen=True)
class ImageVariant:
    """A smaller copy of an uploaded image, made once by the worker (apps/media/variants.py)."""

    width: int
    height: int
    mime_type: str
    # Addressed as `Image.src` is: what a page's srcset lists.
    src: str


@dataclass(frozen=True)
class Image:
    """An uploaded image a post shows: its `media` entries that name an uploaded medium, in order,
    then the ones its body shows (`![alt](src)`), each once."""

    medium_id: int
    # Content-addressed: "<sha256 of the stored bytes>.<ext>", the same for the same bytes only.
    name: str
    # How the post's body and the pages address it: MEDIA_URL + name ("/media/<name>" on the
    # embedded default; a CDN's absolute address where MEDIA_URL names one). A destination that
    # serves the file from elsewhere (a static site's repository) rewrites this in the body.
    src: str
    # Its absolute public address, `src` joined to SITE_URL: what mail clients and social networks fetch.
    url: str
    mime_type: str
    width: int
    height: int
    size: int
    alt_text: str
    uploaded_at: datetime
    # The stored file's bytes (read from the media store when called, not before).
    read: Callable[[], bytes] = field(compare=False, repr=False)
    # The responsive copies made so far, narrowest first (none until the worker made them).
    variants: tuple[ImageVariant, ...] = ()
    # Whether it is one of the post's `media` entries (False: only its body shows it).
    attached: bool = True

    def data(self) -> bytes:
        """The file's bytes for a destination; a store that fails, whatever it raises (a disk's
        error, an S3 client's), is a PublishError the job is tried again after."""
        try:
            return self.read()
        except Exception as exc:
            raise PublishError(
                f"The image {self.name} could not be read from the media store ({type(exc).__name__}: {exc}); "
                "nothing was published, the job is tried again."
            ) from exc


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
    # Where readers find the post's page on the account's blog, if it has one (a social post links to it).
    link: str | None = None
    # The uploaded images it shows (Image): a destination carries each with the post.
    images: tuple[Image, ...] = ()


@dataclass(frozen=True)
class Outcome:
    """What a destination confirms: its reference for the result (a commit), where the
    post now lives in it (a file's path; empty once removed) and its web address, if any."""

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
    # Which attempt this is (1: the first; a later one may find what an earlier one did).
    attempt: int = 1


class Destination(Protocol):
    def publish(self, job: JobContext, document: Document) -> Outcome:
        """Put the post there (a first publication or an update); safe to repeat."""

    def unpublish(self, job: JobContext, document: Document | None) -> Outcome:
        """Take the post down (`document` is None for a deleted post); safe to repeat."""

    def check(self) -> str:
        """Reach the destination and say what is there (the settings' "Test connection")."""


def _ready(channel_id: int) -> str:
    return ""


def _no_url(job) -> str:
    return ""


def _whole(reference: str) -> str:
    return reference


# What a permission allows on a kind's models in the Settings area: {"app_label.model": actions}.
Allows = Mapping[str, frozenset[str]]
EVERY_ACTION = frozenset({"view", "add", "change", "delete"})


@dataclass(frozen=True)
class DestinationKind:
    """Everything a destination package tells the rest of the service about its kind, registered
    once from its AppConfig.ready(). Nothing outside the package names the kind: the channels'
    platform choices, the pipeline, the pages, the access table and the API read it here."""

    platform: str
    # The channel's destination, or None when the channel has none set up.
    load: Callable[[int], Destination | None]
    # Said when a channel of this platform has no destination set up: what to set up, and where.
    missing: str
    # The platform's name as people read it (the channel form's choice, the API's documentation).
    label: str = ""
    # What publishing a post does there, as a sentence for the post's page ("Publish now").
    publishes: str = "The post is handed to its destination and is published once the destination confirms."
    # What the destination's reference for a job names ("commit", "post", "edition").
    reference: str = "reference"
    # Why the channel cannot publish now, as a sentence that says what to set up ("" when it can).
    # Read by the pages, so it looks at the stored set-up only: it reaches no remote service.
    unready: Callable[[int], str] = _ready
    # The reference as a page shows it (a commit id shortened), and the web address it links to,
    # from a job whose channel and `job_related` relations are loaded ("" where there is none).
    short_reference: Callable[[str], str] = _whole
    reference_url: Callable[..., str] = _no_url
    # The channel's relations a job's row reads for `reference_url`, as select_related paths from the job.
    job_related: tuple[str, ...] = ()
    # The counts of the people a post is mailed to, by post id (one query for all of them), for the
    # kinds that mail posts; each value is a Recipients. None: the kind mails nobody.
    recipients: Callable[[list[int]], dict[int, "Recipients"]] | None = None
    # A channel of the kind has a public site (its archive on the account's blog host): the dotted
    # path of the module of the pages it adds to the public site, "" when it has none.
    site: str = ""
    # What that public page holds, as a sentence for the channel's page in the Settings area.
    site_summary: str = ""
    # The dotted paths of the kind's URL modules: its API endpoints (under /v1/), and its other
    # addresses at the root (the pages its e-mails link to, its providers' webhooks); "" for none.
    api_urls: str = ""
    urls: str = ""
    # The dotted path of the kind's Settings-area module: `setup_link(channel_id)` (what the channel's
    # page says of its set-up) and, if the kind shows one, `post_preview(document)` (the post as it
    # will be posted, HTML). A path, not the functions: this registry imports no page.
    admin: str = ""
    # What each user permission allows on the kind's models (apps/settings_area/access.py merges it).
    access: Mapping[str, Allows] = field(default_factory=dict)
    # A post's fields in the destination's own words, where they differ from the plain ones
    # ({"teaser": "Preview line"}): what a story's page calls a channel's overrides.
    field_labels: Mapping[str, str] = field(default_factory=dict)


class Recipients(NamedTuple):
    """The counts of the people a post is mailed to, by the state of their delivery."""

    total: int
    pending: int
    sent: int
    failed: int
    suppressed: int
    uncertain: int


# --- What a kind with a public site (its `site` module) gets from the public site and gives it ---


@dataclass(frozen=True)
class IndexPart:
    """What a kind shows on its channels' index above the posts: a template the index includes, with
    the names its context adds to the page's."""

    template: str
    context: dict = field(default_factory=dict)
    # The part has a form that posts to the index itself (the page's policy lets it).
    form: bool = False


class Look(Protocol):
    """The public site's pages in a channel's look, which the blog hands a kind's page functions
    (the kind's package imports nothing of the blog, which sits above it)."""

    def page(self, request, channel, template: str, context: dict, *, status: int = 200, form: bool = False):
        """The template rendered in the channel's look, with its headers (`form`: it has a form)."""

    def private(self, response):
        """The answer marked for this visitor only: never cached, never indexed."""

    def index(self, request, channel, *, part: IndexPart, status: int):
        """The channel's index (the page of the request's cursors) with `part` above its posts."""


_kinds: dict[str, DestinationKind] = {}


def register(kind: DestinationKind) -> None:
    _kinds[kind.platform] = kind


def kind_for(platform: str) -> DestinationKind | None:
    """The destination registered for the platform (None: it publishes through none)."""
    return _kinds.get(platform)


def kinds() -> list[DestinationKind]:
    """Every registered kind, by platform: one order in every process, whatever order the kinds
    were registered in (the schema's enums, the choices, the pages list them so)."""
    return [_kinds[platform] for platform in sorted(_kinds)]


def destination_for(*, channel_id: int, platform: str, platform_name: str) -> Destination:
    kind = _kinds.get(platform)
    if kind is None:
        raise PublishError(
            f"{platform_name} channels cannot publish on this server yet: no {platform_name} destination is installed "
            "(its package is not in INSTALLED_APPS).",
            permanent=True,
        )
    destination = kind.load(channel_id)
    if destination is None:
        raise PublishError(kind.missing, permanent=True)
    return destination


class Subject(Protocol):
    def document(self, *, post_id: int, action: str, published_at: datetime | None) -> Document | None:
        """The post as it is now, for a job; None when it no longer exists."""

    def documents(self, *, wanted: list[tuple[int, str, datetime | None]]) -> list[Document | None]:
        """document() of each (post id, action, publication date), in order: a batch's, read together."""

    def confirmed(self, *, jobs: list) -> None:
        """The destination confirmed the jobs (a batch's, called in the transaction that records them)."""

    def failed(self, *, job) -> None:
        """The job failed for good (called in the transaction that records it)."""

    def links(self, *, job) -> list[tuple[str, str]]:
        """The Settings area's pages of what the job publishes, for a notice about it: (what the
        page is, its path), e.g. the post's and the story's it belongs to; none once it is deleted."""


_subject: list[Subject] = []


def register_subject(subject: Subject) -> None:
    _subject[:] = [subject]


def subject() -> Subject:
    if not _subject:
        raise RuntimeError("no publishing subject registered (the posts app registers it when it is ready)")
    return _subject[0]
