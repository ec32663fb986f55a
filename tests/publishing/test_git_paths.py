"""Paths git refuses are never committed: a path template with such a part is refused where it is
set up (the Settings area's form, connect_git), a post whose slug makes such a path fails its job
and nothing else, and the commit itself refuses one, against real bare repositories that `git
fsck` then finds clean."""

import shutil
import subprocess

import pytest

from apps.core.destinations import PublishError
from apps.core.errors import InvalidInput
from apps.posts.editor_status import post_publish_now
from apps.posts.services import post_create
from apps.publishing.git import cache, paths, repository
from apps.publishing.git.models import GitDestination
from apps.publishing.git.remote import Credentials, parse_remote
from apps.publishing.git.services import GitSettings, git_settings_check
from apps.publishing.models import PublicationJob
from apps.publishing.services import channel_run
from tests.conftest import admin_session, json_error
from tests.factories import AdminUserFactory, ChannelFactory
from tests.publishing.conftest import files, head
from tests.publishing.test_git_destination import push_commit
from tests.publishing.test_settings_area import destination_form

pytestmark = pytest.mark.django_db

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="the git CLI is not installed here")

# Each a template with one part git refuses (or that refuses itself), and that part.
REFUSED_TEMPLATES = [
    ("docs/.git/hooks/{slug}", ".git"),
    ("a/.git/{slug}", ".git"),
    ("content/.GiT/{slug}.md", ".GiT"),
    (".git./{slug}", ".git."),
    ("content/.git /{slug}.md", ".git "),
    ("git~1/{slug}", "git~1"),
    ("content/GIT~1/{slug}.md", "GIT~1"),
    ("content/.g\u200cit/{slug}.md", ".g\u200cit"),
    ("a/.git::$INDEX_ALLOCATION/{slug}.md", ".git::$INDEX_ALLOCATION"),
    ("content//{slug}.md", ""),
    ("content/./{slug}.md", "."),
    ("content/../{slug}.md", ".."),
    ("content/.../{slug}.md", "..."),
    ("content/ /{slug}.md", " "),
    ("content\\posts/{slug}.md", "content\\posts"),
    ("git~{id}/{slug}.md", "git~{id}"),
]

# Each a path git refuses in a commit.
REFUSED_PATHS = [
    ".git/config",
    "a/.git/x.md",
    "a/.GIT/x.md",
    ".git./x.md",
    ".git /x.md",
    ".git.../x.md",
    "git~1/x.md",
    "Git~1/x.md",
    ".g\u200cit/x.md",
    ".\u200dgit/x.md",
    ".git::$INDEX_ALLOCATION/x.md",
    "a/../x.md",
    "a//x.md",
    "./x.md",
    "a\\b/x.md",
    "posts/.git",
    "a/.../x.md",
    "a/. /x.md",
]


@pytest.mark.parametrize(("template", "part"), REFUSED_TEMPLATES)
def test_a_path_template_with_a_part_git_refuses_is_refused_naming_the_part(bare_repo, template, part):
    with pytest.raises(InvalidInput) as refused:
        git_settings_check(GitSettings(repository_url=str(bare_repo), path_template=template))

    assert refused.value.details["field"] == "path_template"
    assert f"The path template's part {part!r}" in refused.value.details["errors"][0]["message"]


@pytest.mark.parametrize(
    "template",
    ["content/posts/{slug}.md", ".{slug}/index.md", "docs/.github/{slug}.md", "git~2/{id}.md", "a.git/{slug}"],
)
def test_a_path_template_git_accepts_is_accepted(bare_repo, template):
    git_settings_check(GitSettings(repository_url=str(bare_repo), path_template=template))


def test_the_settings_area_form_names_the_refused_part_and_saves_nothing(bare_repo):
    channel = ChannelFactory(platform="git")
    client = admin_session(AdminUserFactory(account=channel.account))
    data = destination_form(channel, repository_url=str(bare_repo), path_template="docs/.git/hooks/{slug}")

    response = client.post("/admin/publishing_git/gitdestination/add/", data)

    assert response.status_code == 200
    [error] = response.context["adminform"].form.errors["path_template"]
    assert error.startswith("The path template's part '.git' is refused: git refuses .git in any spelling")
    assert not GitDestination.objects.exists()


def test_connect_git_json_error_names_the_refused_part(manage, bare_repo):
    channel = ChannelFactory(platform="git")

    code, out, err = manage("connect_git", channel.pk, "--url", str(bare_repo), "--path", ".git./{slug}", "--json")

    assert code == 1 and out == ""
    error = json_error(err)
    assert error["code"] == "VALIDATION_ERROR" and error["details"]["field"] == "path_template"
    assert "The path template's part '.git.' is refused" in error["message"]
    assert not GitDestination.objects.exists()


@needs_git
@pytest.mark.parametrize(
    ("template", "slug", "made"),
    [(".{slug}/index.md", "git", ".git"), (".{slug}/index.md", "GIT", ".GIT"), ("{slug}~1/index.md", "git", "git~1")],
)
def test_a_post_whose_slug_makes_a_path_git_refuses_fails_its_job_and_the_next_post_publishes(
    git_channel, bare_repo, template, slug, made
):
    GitDestination.objects.filter(channel=git_channel).update(path_template=template)
    refused = post_create(channel=git_channel, title="Refused", slug=slug, body="x")
    fine = post_create(channel=git_channel, title="Fine", slug="fine", body="y")
    post_publish_now(post_id=refused.pk)
    post_publish_now(post_id=fine.pk)

    channel_run(git_channel.pk)

    job = PublicationJob.objects.get(post_id=refused.pk)
    assert (job.state, job.attempts) == ("failed", 1)
    assert job.last_error.startswith(f"This post's path {template.replace('{slug}', slug)!r}")
    assert f"has a part git refuses, {made!r}" in job.last_error and "Nothing was committed" in job.last_error
    refused.refresh_from_db()
    fine.refresh_from_db()
    assert refused.publication_status == "draft"
    assert fine.publication_status == "published"
    assert list(files(bare_repo)) == [template.replace("{slug}", "fine")]
    subprocess.run(["git", "--git-dir", str(bare_repo), "fsck", "--strict"], check=True, capture_output=True)


@pytest.mark.parametrize("path", REFUSED_PATHS)
def test_no_commit_is_made_with_a_path_git_refuses(bare_repo, path):
    before = push_commit(bare_repo, {"README.md": b"A site.\n"})
    remote = parse_remote(str(bare_repo))

    with (
        cache.cached_copy(remote.url) as repo,
        repository.connect(remote, Credentials(), timeout=10) as (
            client,
            where,
        ),
    ):
        parent = repository.fetch_head(client, where, repo, "main").commit
        with pytest.raises(PublishError) as refused:
            repository.commit_and_push(
                client,
                where,
                repo,
                branch="main",
                parent=parent,
                changes={path: b"x\n"},
                message="Bad\n",
                author=b"Pat <pat@example.com>",
            )

    assert refused.value.permanent
    assert f"No commit was made: the path {path!r} has a part git refuses" in refused.value.message
    assert head(bare_repo) == before


@pytest.mark.parametrize(
    ("element", "why"),
    [
        (".GIT", paths.DOTGIT),
        ("git~1", paths.DOTGIT),
        (".g\u200cit", paths.DOTGIT),
        ("..", paths.EMPTY_OR_DOTS),
        ("", paths.EMPTY_OR_DOTS),
        ("...", paths.DOTS_AND_SPACES),
        (" ", paths.DOTS_AND_SPACES),
        ("a\\b", paths.BACKSLASH),
        ("a\0b", paths.NUL),
        (".gitignore", None),
        ("git~2", None),
        ("post.", None),
    ],
)
def test_each_refused_part_is_given_its_own_reason(element, why):
    assert paths.element_problem(element) == why
