"""The git destination: what a publication puts in a real repository, read back with dulwich (and
with the `git` CLI where it is installed). Each test drives the pipeline as the application does:
a post's change writes a job, `channel_run` carries it out against a bare repository made in the
test, or a smart-HTTP git server started in the test for the https path."""

import shutil
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.utils import timezone
from dulwich.object_store import commit_tree_changes
from dulwich.objects import Blob, Commit, Tree
from dulwich.repo import Repo

from apps.core.errors import InvalidInput
from apps.posts.editor_status import post_publish_now, post_set_status
from apps.posts.models import Post
from apps.posts.services import post_create, post_delete, post_update_content
from apps.publishing.git import repository
from apps.publishing.git.models import GitDestination
from apps.publishing.git.services import GitSettings, git_destination_save, git_settings_check
from apps.publishing.models import PublicationJob
from apps.publishing.services import channel_run
from apps.webhooks.models import Event
from tests.factories import ChannelFactory, GitDestinationFactory, TagFactory
from tests.publishing.conftest import files, front_matter, head, history, make_bare_repository
from tests.publishing.git_http_server import GitHttpServer, SilentHost

pytestmark = pytest.mark.django_db

TOKEN = "gho-Secret-Token-0123456789abcdef"
PATH = "content/posts/hello-world.md"
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="the git CLI is not installed here")


def publish(channel, **fields) -> Post:
    """A new post of the channel, published through the pipeline ("Publish now", then a run)."""
    post = post_create(channel=channel, **({"title": "Hello, world", "body": "First words.\n"} | fields))
    post_publish_now(post_id=post.pk)
    channel_run(channel.pk)
    post.refresh_from_db()
    return post


def last_job(post_id: int) -> PublicationJob:
    return PublicationJob.objects.filter(post_id=post_id).order_by("-id").first()


def read_post(bare: Path, path: str = PATH) -> tuple[dict, str]:
    """(front matter, body) of a post's file at the branch's head; a blank line sets the body off."""
    matter, rest = front_matter(files(bare)[path])
    assert rest.startswith("\n")
    return matter, rest[1:]


def subject(commit) -> str:
    return commit.message.decode().splitlines()[0]


def push_commit(bare: Path, changes: dict[str, bytes], *, message: str = "Edit by hand", branch: str = "main") -> bytes:
    """Someone else's commit on `branch` of the bare repository (its new head)."""
    ref = f"refs/heads/{branch}".encode()
    with Repo(str(bare)) as repo:
        store = repo.object_store
        parent = repo.refs.as_dict().get(ref)
        if parent is None:
            empty = Tree()
            store.add_object(empty)
            base = empty.id
        else:
            base = store[parent].tree
        entries = []
        for path, content in changes.items():
            blob = Blob.from_string(content)
            store.add_object(blob)
            entries.append((path.encode(), repository.FILE_MODE, blob.id))
        commit = Commit()
        commit.tree = commit_tree_changes(store, base, entries)
        commit.parents = [parent] if parent else []
        commit.author = commit.committer = b"Sam Someone <sam@example.com>"
        commit.commit_time = commit.author_time = int(time.time())
        commit.commit_timezone = commit.author_timezone = 0
        commit.message = message.encode()
        store.add_object(commit)
        repo.refs[ref] = commit.id
        return commit.id


def git(bare: Path, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(bare), *args], check=True, capture_output=True, text=True).stdout


# --- publishing ---------------------------------------------------------------------------------


def test_publishing_commits_the_post_as_markdown_with_front_matter_and_marks_it_published(git_channel, bare_repo):
    tags = [TagFactory(account=git_channel.account, name=name) for name in ("python", "django")]
    post = publish(
        git_channel,
        title="Hello, world",
        slug="hello-world",
        body="# Hi\n\nSome *Markdown*.\n",
        teaser="A teaser",
        meta_description="The description",
        tags=tags,
    )

    matter, body = read_post(bare_repo)
    assert post.publication_status == "published"
    assert post.published_at is not None and post.published_at.microsecond == 0
    assert matter == {
        "title": "Hello, world",
        "date": post.published_at,
        "slug": "hello-world",
        "tags": ["django", "python"],
        "description": "The description",
        "draft": False,
        "id": post.pk,
    }
    assert list(matter) == ["title", "date", "slug", "tags", "description", "draft", "id"]
    assert body == "# Hi\n\nSome *Markdown*.\n"
    job = last_job(post.pk)
    assert (job.state, job.action, job.path, job.last_error) == ("succeeded", "publish", PATH, "")
    assert job.reference == head(bare_repo).decode()
    assert job.published_at == post.published_at


def test_the_commit_is_by_the_configured_author_with_trailers_naming_post_and_job(git_channel, bare_repo):
    post = publish(git_channel, title="Hello, world", slug="hello-world")

    [commit] = history(bare_repo)
    assert commit.author == commit.committer == b"Pat Publisher <pat@example.com>"
    job = last_job(post.pk)
    assert commit.message.decode() == f"Publish “Hello, world”\n\nPost-Id: {post.pk}\nPublication-Job-Id: {job.pk}\n"


@needs_git
def test_git_itself_reads_the_commit_and_the_file_as_published(git_channel, bare_repo, tmp_path):
    post = publish(git_channel, title="Hello, world", slug="hello-world", body="Body text.\n")

    log = git(bare_repo, "log", "--format=%an <%ae>%n%s%n%(trailers:key=Post-Id,valueonly)", "main")
    assert log.splitlines()[:3] == ["Pat Publisher <pat@example.com>", "Publish “Hello, world”", str(post.pk)]
    assert git(bare_repo, "show", f"main:{PATH}").encode() == files(bare_repo)[PATH]
    git(bare_repo, "fsck", "--strict")
    # A clone checks the branch out: the repository's HEAD names the branch the service created.
    subprocess.run(["git", "clone", "-q", str(bare_repo), str(tmp_path / "clone")], check=True)
    assert (tmp_path / "clone" / PATH).read_text().endswith("\nBody text.\n")


@pytest.mark.parametrize(
    ("teaser", "meta_description", "expected"),
    [("The teaser", None, "The teaser"), ("", None, None), ("The teaser", "Meta", "Meta")],
)
def test_the_description_is_the_meta_description_else_the_teaser(
    git_channel, bare_repo, teaser, meta_description, expected
):
    publish(git_channel, slug="hello-world", teaser=teaser, meta_description=meta_description)

    matter, _ = read_post(bare_repo)
    assert matter.get("description") == expected


@pytest.mark.parametrize(
    "title",
    [
        "She said \"yes\" and 'no'",
        "Part 1: the beginning",
        "Line one\nline two",
        "Launch 🚀 day 🎉",
        "- a leading dash",
        "# not a comment",
        "&anchor",
        "*alias",
        "yes",
        "null",
        "123",
        "~",
        "@handle",
        "%TAG",
        "!important",
        "key: value # trailing",
        "Before\n---\nAfter",
        "  spaced  ",
        "tab\there",
    ],
)
def test_any_title_round_trips_through_the_front_matter(git_channel, bare_repo, title):
    post = publish(git_channel, title=title, slug="awkward")

    matter, body = read_post(bare_repo, "content/posts/awkward.md")
    assert matter["title"] == title
    assert matter["id"] == post.pk
    assert body == "First words.\n"
    assert subject(history(bare_repo)[0]) == f"Publish “{' '.join(title.split())}”"


# --- updates, renames and repeats ----------------------------------------------------------------


def test_a_content_change_commits_the_new_file_with_lastmod_and_an_update_message(git_channel, bare_repo):
    post = publish(git_channel, title="Hello, world", slug="hello-world")
    published_head = head(bare_repo)

    post, _ = post_update_content(post=post, title="Hello again", body="Second words.\n")
    channel_run(git_channel.pk)

    post.refresh_from_db()
    matter, body = read_post(bare_repo)
    assert body == "Second words.\n"
    assert matter["title"] == "Hello again"
    assert matter["date"] == post.published_at
    assert matter["lastmod"] == post.updated_at.replace(microsecond=0)
    newest, previous = history(bare_repo)[:2]
    assert previous.id == published_head and newest.parents == [published_head]
    assert subject(newest) == "Update “Hello again”"
    job = last_job(post.pk)
    assert (job.action, job.state, job.reference) == ("update", "succeeded", newest.id.decode())


def test_a_slug_change_moves_the_file_in_one_commit(git_channel, bare_repo):
    post = publish(git_channel, title="Hello, world", slug="hello-world")
    commits_before = len(history(bare_repo))

    post_update_content(post=post, slug="goodbye-world")
    channel_run(git_channel.pk)

    assert len(history(bare_repo)) == commits_before + 1
    assert list(files(bare_repo)) == ["content/posts/goodbye-world.md"]
    assert read_post(bare_repo, "content/posts/goodbye-world.md")[0]["slug"] == "goodbye-world"
    assert last_job(post.pk).path == "content/posts/goodbye-world.md"


def test_a_job_run_again_after_its_push_went_through_commits_nothing_more(git_channel, bare_repo, monkeypatch):
    """The push is sent but its answer is lost: the retry finds the file as it would write it."""
    real_push = repository.commit_and_push
    pushes = []

    def push_then_lose_the_answer(*args, **kwargs):
        pushes.append(real_push(*args, **kwargs))
        if len(pushes) == 1:
            raise TimeoutError("read timed out")
        return pushes[-1]

    monkeypatch.setattr(repository, "commit_and_push", push_then_lose_the_answer)
    post = publish(git_channel, title="Hello, world", slug="hello-world")
    job = last_job(post.pk)
    assert (job.state, post.publication_status) == ("queued", "draft")
    assert "did not answer in time" in job.last_error

    PublicationJob.objects.filter(pk=job.pk).update(next_attempt_at=timezone.now())
    channel_run(git_channel.pk)

    job.refresh_from_db()
    post.refresh_from_db()
    assert len(pushes) == 1
    [commit] = history(bare_repo)
    assert (job.state, job.attempts, job.reference) == ("succeeded", 2, commit.id.decode())
    assert post.published_at == job.published_at == read_post(bare_repo)[0]["date"]


# --- taking posts down ---------------------------------------------------------------------------


def test_setting_a_published_post_back_to_draft_deletes_its_file(git_channel, bare_repo):
    post = publish(git_channel, title="Hello, world", slug="hello-world")
    other = publish(git_channel, title="Stays", slug="stays")

    post_set_status(post_id=post.pk, status="draft")
    channel_run(git_channel.pk)

    assert list(files(bare_repo)) == ["content/posts/stays.md"]
    assert subject(history(bare_repo)[0]) == "Unpublish “Hello, world”"
    job = last_job(post.pk)
    assert (job.action, job.state, job.path) == ("unpublish", "succeeded", "")
    assert last_job(other.pk).path == "content/posts/stays.md"


def test_unpublishing_keeps_the_file_as_a_draft_when_the_channel_says_so(git_channel, bare_repo, monkeypatch):
    GitDestination.objects.filter(channel=git_channel).update(unpublish_keeps_file=True)
    # Published a while ago, so the time of the take-down cannot pass for the publication date.
    with monkeypatch.context() as earlier:
        earlier.setattr(timezone, "now", lambda: datetime(2024, 3, 1, 9, 30, 15, 500000, tzinfo=UTC))
        post = publish(git_channel, title="Hello, world", slug="hello-world", body="Kept.\n")
    published = read_post(bare_repo)[0]
    assert published["date"] == datetime(2024, 3, 1, 9, 30, 15, tzinfo=UTC)

    post_set_status(post_id=post.pk, status="draft")
    channel_run(git_channel.pk)

    matter, body = read_post(bare_repo)
    assert matter["draft"] is True
    assert (matter["title"], matter["id"], matter["date"], body) == (
        "Hello, world",
        post.pk,
        published["date"],
        "Kept.\n",
    )
    assert subject(history(bare_repo)[0]) == "Unpublish “Hello, world”"
    assert last_job(post.pk).state == "succeeded"


def test_deleting_a_published_post_removes_its_file_though_the_post_is_gone(git_channel, bare_repo):
    post = publish(git_channel, title="Hello, world", slug="hello-world")
    post_id = post.pk

    post_delete(post_id=post_id)
    channel_run(git_channel.pk)

    assert not Post.objects.filter(pk=post_id).exists()
    assert files(bare_repo) == {}
    newest = history(bare_repo)[0]
    assert newest.message.decode().startswith(f"Unpublish “Hello, world”\n\nPost-Id: {post_id}\n")
    assert last_job(post_id).state == "succeeded"


def test_taking_down_a_post_whose_file_is_already_gone_commits_nothing(git_channel, bare_repo):
    post = publish(git_channel, title="Hello, world", slug="hello-world")
    post_set_status(post_id=post.pk, status="draft")
    channel_run(git_channel.pk)
    down = head(bare_repo)

    post_delete(post_id=post.pk)  # a draft: no job; the repeat is a second unpublish of the same post
    PublicationJob.objects.create(channel=git_channel, post_id=post.pk, title="Hello, world", action="unpublish")
    channel_run(git_channel.pk)

    assert head(bare_repo) == down
    assert last_job(post.pk).state == "succeeded"


# --- paths that are not ours ---------------------------------------------------------------------


def test_a_second_post_with_the_same_path_fails_for_good_and_the_first_file_is_untouched(git_channel, bare_repo):
    first = publish(git_channel, title="Hello, world", slug="hello-world")
    original, original_head = files(bare_repo)[PATH], head(bare_repo)
    # A second channel of the account writes to the same repository with the same template.
    other_channel = ChannelFactory(platform="git", account=git_channel.account)
    git_destination_save(channel=other_channel, settings=GitSettings(repository_url=str(bare_repo)))

    second = publish(other_channel, title="Hello, world", slug="hello-world")

    job = last_job(second.pk)
    assert job.state == "failed"
    assert job.last_error.startswith(f"{PATH} already holds another file (of post {first.pk}); it is never overwritten")
    assert second.publication_status == "draft"
    assert (files(bare_repo)[PATH], head(bare_repo)) == (original, original_head)


def test_a_file_this_service_did_not_write_is_never_overwritten(git_channel, bare_repo):
    theirs = b"---\ntitle: Written by hand\n---\n\nMine.\n"
    hand_head = push_commit(bare_repo, {PATH: theirs})

    post = publish(git_channel, title="Hello, world", slug="hello-world")

    job = last_job(post.pk)
    assert job.state == "failed"
    assert f"{PATH} already holds another file (of post unknown)" in job.last_error
    assert (files(bare_repo)[PATH], head(bare_repo)) == (theirs, hand_head)


# --- branches and path templates -----------------------------------------------------------------


def test_an_empty_repository_gets_the_branch_from_the_first_publication(git_channel, bare_repo):
    assert head(bare_repo) is None

    publish(git_channel, title="Hello, world", slug="hello-world")

    with Repo(str(bare_repo)) as repo:
        assert sorted(repo.refs.keys(base=b"refs/heads/")) == [b"main"]
    [commit] = history(bare_repo)
    assert commit.parents == []
    assert list(files(bare_repo)) == [PATH]


def test_a_repository_without_the_configured_branch_fails_for_good_naming_the_branches_it_has(git_channel, bare_repo):
    push_commit(bare_repo, {"index.html": b"<p>site</p>\n"}, branch="gh-pages")
    push_commit(bare_repo, {"README.md": b"readme\n"}, branch="develop")

    post = publish(git_channel, title="Hello, world", slug="hello-world")

    job = last_job(post.pk)
    assert job.state == "failed"
    assert job.last_error.startswith("The branch 'main' does not exist in the repository (it has: develop, gh-pages)")
    assert head(bare_repo, "main") is None


@pytest.mark.parametrize(
    ("template", "says"),
    [
        ("content/../../etc/{slug}.md", "empty, '.' and '..' parts are refused"),
        ("../{slug}.md", "empty, '.' and '..' parts are refused"),
        ("/content/{slug}.md", "must be a relative path inside the repository"),
        ("~/posts/{slug}.md", "must be a relative path inside the repository"),
        ("C:/posts/{slug}.md", "must be a relative path inside the repository"),
        ("content/{title}.md", "unknown placeholders {title}"),
        ("content/{slug.upper}.md", "unknown placeholders"),
        ("content/posts/index.md", "needs {slug} or {id}"),
        ("content/{year}/{month}.md", "needs {slug} or {id}"),
        (".git/hooks/{slug}", "git refuses .git in any spelling"),
        ("content/{slug", "is malformed"),
    ],
)
def test_path_templates_that_could_write_elsewhere_are_refused(bare_repo, template, says):
    with pytest.raises(InvalidInput) as refused:
        git_settings_check(GitSettings(repository_url=str(bare_repo), path_template=template))

    assert refused.value.details["field"] == "path_template"
    assert says in refused.value.details["errors"][0]["message"]


def test_date_and_id_placeholders_render_into_the_path(git_channel, bare_repo):
    GitDestination.objects.filter(channel=git_channel).update(path_template="blog/{year}/{month}/{day}/{id}.md")

    post = publish(git_channel, title="Hello, world", slug="hello-world")

    date = post.published_at.astimezone(UTC)
    expected = f"blog/{date:%Y}/{date:%m}/{date:%d}/{post.pk}.md"
    assert list(files(bare_repo)) == [expected]
    assert last_job(post.pk).path == expected


# --- someone else pushes meanwhile ---------------------------------------------------------------


def test_a_commit_pushed_by_someone_else_meanwhile_is_kept_under_ours(git_channel, bare_repo, monkeypatch):
    publish(git_channel, title="First", slug="first")
    old_head = head(bare_repo)
    real_fetch = repository.fetch_head
    foreign = []

    def fetch_then_someone_pushes(*args, **kwargs):
        fetched = real_fetch(*args, **kwargs)
        if not foreign:
            foreign.append(push_commit(bare_repo, {"about.md": b"About us.\n"}, message="Edit the about page"))
        return fetched

    monkeypatch.setattr(repository, "fetch_head", fetch_then_someone_pushes)
    post = publish(git_channel, title="Second", slug="second")

    job = last_job(post.pk)
    assert job.state == "succeeded"
    ours, theirs, first = history(bare_repo)[:3]
    assert theirs.id == foreign[0] and subject(theirs) == "Edit the about page"
    assert ours.parents == [foreign[0]] and theirs.parents == [old_head] and first.id == old_head
    assert job.reference == ours.id.decode() == head(bare_repo).decode()
    assert sorted(files(bare_repo)) == ["about.md", "content/posts/first.md", "content/posts/second.md"]
    with Repo(str(bare_repo)) as repo:  # nothing was force-pushed: the old head is an ancestor
        assert old_head in {entry.commit.id for entry in repo.get_walker(include=[head(bare_repo)])}
    if shutil.which("git"):
        git(bare_repo, "merge-base", "--is-ancestor", old_head.decode(), head(bare_repo).decode())


# --- https: a smart-HTTP server with a token -----------------------------------------------------


@pytest.fixture
def git_server(tmp_path, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True  # the server listens on 127.0.0.1
    root = tmp_path / "served"
    make_bare_repository(root / "site.git")
    server = GitHttpServer(root, TOKEN).start()
    yield server
    server.stop()


def http_channel(url: str, token: str = TOKEN):
    channel = ChannelFactory(platform="git")
    git_destination_save(
        channel=channel,
        settings=GitSettings(repository_url=url, author_name="Pat Publisher", author_email="pat@example.com"),
        token=token,
    )
    return channel


def test_the_right_token_publishes_over_smart_http(git_server, tmp_path):
    channel = http_channel(git_server.url("site.git"))

    post = publish(channel, title="Over HTTP", slug="over-http")

    served = tmp_path / "served" / "site.git"
    assert last_job(post.pk).state == "succeeded"
    assert front_matter(files(served)["content/posts/over-http.md"])[0]["title"] == "Over HTTP"
    assert history(served)[0].author == b"Pat Publisher <pat@example.com>"
    assert post.publication_status == "published"


def test_a_wrong_token_fails_for_good_and_is_never_shown(git_server, tmp_path, caplog):
    wrong = "gho-Wrong-Token-fedcba9876543210"
    channel = http_channel(git_server.url("site.git"), token=wrong)
    caplog.set_level("DEBUG")

    post = publish(channel, title="Over HTTP", slug="over-http")

    job = last_job(post.pk)
    assert job.state == "failed"
    assert job.last_error.startswith("The repository refused the credentials (HTTP 401/403)")
    assert git_server.requests  # it was the server that refused
    assert Event.objects.filter(kind="post.failed", post_id=post.pk).exists()
    job_fields = [str(value) for value in PublicationJob.objects.filter(pk=job.pk).values().get().values()]
    shown = [caplog.text, *job_fields, *Event.objects.values_list("body", flat=True)]
    assert not [text for text in shown if wrong in text or TOKEN in text]
    assert head(tmp_path / "served" / "site.git") is None


def test_a_url_with_no_repository_behind_it_fails_for_good(git_server):
    channel = http_channel(git_server.url("missing.git"))

    post = publish(channel, title="Over HTTP", slug="over-http")

    job = last_job(post.pk)
    assert job.state == "failed"
    assert job.last_error.startswith(f"No git repository at {git_server.url('missing.git')}")


def test_a_loopback_remote_is_refused_without_private_targets(git_server, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    url = git_server.url("site.git")
    with pytest.raises(InvalidInput) as refused:
        git_settings_check(GitSettings(repository_url=url))
    assert refused.value.details["field"] == "repository_url"
    assert "not publicly routable" in refused.value.details["errors"][0]["message"]

    # Set up while it was allowed; refused when the job runs, before anything is sent.
    destination = GitDestinationFactory(repository_url=url, token=TOKEN)
    post = publish(destination.channel, title="Over HTTP", slug="over-http")

    job = last_job(post.pk)
    assert job.state == "failed"
    assert job.last_error.startswith("The repository's host is not allowed")
    assert git_server.requests == []


def test_a_host_that_never_answers_is_cut_off_and_retried_later(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    settings.PUBLISH_TIMEOUT = 2
    host = SilentHost().start()
    try:
        channel = http_channel(host.url)
        post = publish(channel, title="Into the void", slug="void")
    finally:
        host.stop()

    job = last_job(post.pk)
    assert job.state == "queued"
    assert job.next_attempt_at > timezone.now()
    assert job.last_error.startswith("The repository did not answer in time")
    assert f"It will be tried again at {job.next_attempt_at:%Y-%m-%d %H:%M:%S} UTC." in job.last_error
    assert host.client_hung_up.is_set()  # our side gave up; the host never did
    assert host.connections == 1  # once: not asked again behind the job's back, past its timeout
    assert post.publication_status == "draft"


# --- remotes that cannot be used -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "local_allowed", "says"),
    [
        ("https://pat:ghp_secret@github.com/pat/site.git", True, "Put the token in the token field, not in the URL"),
        ("http://git.example.com/pat/site.git", False, "Use https://: plain http:// would send the token"),
        ("/srv/git/site.git", False, "Local repositories are allowed only with GIT_ALLOW_LOCAL_REPOSITORIES=true"),
        ("file:///srv/git/site.git", False, "Local repositories are allowed only with GIT_ALLOW_LOCAL_REPOSITORIES"),
        ("https://github.com", True, "names no repository"),
        ("ftp://example.com/site.git", True, "is not a repository URL this service can reach"),
        ("not a url", True, "is not a repository URL this service can reach"),
        ("", True, "Enter the repository's URL."),
    ],
)
def test_remotes_that_cannot_be_used_are_refused_with_a_sentence(settings, url, local_allowed, says):
    settings.GIT_ALLOW_LOCAL_REPOSITORIES = local_allowed

    with pytest.raises(InvalidInput) as refused:
        git_settings_check(GitSettings(repository_url=url))

    assert refused.value.details["field"] == "repository_url"
    assert says in refused.value.details["errors"][0]["message"]
    assert "ghp_secret" not in str(refused.value.details)


def test_a_host_that_does_not_resolve_is_tried_again_not_failed_for_good(settings):
    # A name that does not resolve now may again after a DNS outage (.invalid never does: RFC 2606).
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    destination = GitDestinationFactory(repository_url="https://git.example.invalid/site.git", token="tok")
    post = post_create(channel=destination.channel, title="Looked up later", body="x")
    post_publish_now(post_id=post.pk)
    channel_run(destination.channel_id)
    job = last_job(post.pk)
    assert job.state == "queued" and job.next_attempt_at > timezone.now()
    assert job.last_error.startswith("The repository's host could not be looked up: The host 'git.example.invalid'")


def test_the_workers_copy_names_the_head_it_holds_so_the_next_fetch_brings_only_what_is_new(
    git_channel, bare_repo, settings
):
    post = post_create(channel=git_channel, title="Cached", body="x")
    post_publish_now(post_id=post.pk)
    channel_run(git_channel.pk)
    [copy] = Path(settings.GIT_CACHE_DIR).glob("*.git")
    with Repo(str(copy)) as cached:
        # Without the ref, dulwich would offer the remote nothing it has, and download everything.
        assert cached.refs[b"refs/heads/main"] == head(bare_repo)
