"""The demo git channel: where local repositories are allowed (`make run`), seed_demo points it at a
bare repository under var/ and publishes its published post there through the pipeline, so a
newcomer can `git log` a real commit; elsewhere the channel has no destination and the demo still
shows a published git post."""

import shutil
import subprocess
from pathlib import Path

import pytest
from dulwich.object_store import iter_tree_contents
from dulwich.repo import Repo

from apps.demo.seed import seed_demo
from apps.posts.models import Post
from apps.publishing.git.models import GitDestination
from apps.publishing.models import PublicationJob

pytestmark = pytest.mark.django_db


@pytest.fixture
def var_dir(settings, tmp_path) -> Path:
    settings.VAR_DIR = tmp_path / "var"
    # The workers' repository copies are kept under var/ too: never the checkout's own var/.
    settings.GIT_CACHE_DIR = tmp_path / "var" / "git-cache"
    return tmp_path / "var"


def commits(path: Path) -> list:
    """The commits of the repository's HEAD branch, newest first."""
    with Repo(str(path)) as repo:
        return [entry.commit for entry in repo.get_walker(include=[repo.head()])]


def files_at_head(path: Path) -> dict[str, bytes]:
    with Repo(str(path)) as repo:
        tree = repo[repo.head()].tree
        return {e.path.decode(): repo.object_store[e.sha].data for e in iter_tree_contents(repo.object_store, tree)}


def published_git_post(account: dict) -> Post:
    return Post.objects.get(channel_id=account["channels"]["git"], publication_status="published")


def test_seed_demo_commits_the_demo_git_channels_published_post_to_a_repository_under_var(settings, var_dir):
    settings.GIT_ALLOW_LOCAL_REPOSITORIES = True

    result = seed_demo()

    for account in result["accounts"]:
        path = var_dir / "demo-git" / f"account-{account['id']}.git"
        assert account["git_repository"] == str(path)
        destination = GitDestination.objects.get(channel_id=account["channels"]["git"])
        assert destination.repository_url == str(path)
        post = published_git_post(account)
        [commit] = commits(path)
        assert commit.message.decode().startswith(f"Publish “{post.title}”\n")
        assert commit.author.decode() == "Demo Publisher <publisher@example.com>"
        # The post and, in the same commit, the demo's uploaded cover it shows.
        cover = post.media.get().medium
        assert sorted(files_at_head(path)) == [
            f"content/posts/{post.slug}.md",
            f"static/images/{cover.created_at.year}/{cover.name}",
        ]
        assert f"\nid: {post.pk}\n" in files_at_head(path)[f"content/posts/{post.slug}.md"].decode()
        job = PublicationJob.objects.get(post_id=post.pk)
        assert (job.state, job.reference) == ("succeeded", commit.id.decode())
        assert job.url == f"https://docs.example.com/posts/{post.slug}/"
        assert post.published_at == job.published_at
        # The draft and the scheduled post of the channel are not in the repository.
        others = Post.objects.filter(channel_id=account["channels"]["git"]).exclude(pk=post.pk)
        assert set(others.values_list("publication_status", flat=True)) == {"draft", "scheduled"}


@pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command line")
def test_git_log_in_the_demo_repository_shows_the_commit(settings, var_dir):
    settings.GIT_ALLOW_LOCAL_REPOSITORIES = True
    account = seed_demo()["accounts"][0]

    log = subprocess.run(
        ["git", "-C", account["git_repository"], "log", "--format=%s"], capture_output=True, text=True, check=True
    )

    assert log.stdout == f"Publish “{published_git_post(account).title}”\n"


def test_a_second_seed_demo_makes_no_second_commit_of_the_same_content(settings, var_dir):
    settings.GIT_ALLOW_LOCAL_REPOSITORIES = True
    first = seed_demo()
    heads = {account["id"]: commits(account["git_repository"])[0].id for account in first["accounts"]}
    jobs = PublicationJob.objects.count()

    second = seed_demo()

    for account in second["accounts"]:
        assert [commit.id for commit in commits(account["git_repository"])] == [heads[account["id"]]]
        assert published_git_post(account).publication_status == "published"
    assert PublicationJob.objects.count() == jobs
    assert GitDestination.objects.count() == len(second["accounts"])


def test_without_local_repositories_the_git_channel_has_no_destination_and_still_a_published_post(settings, var_dir):
    settings.GIT_ALLOW_LOCAL_REPOSITORIES = False

    result = seed_demo()

    for account in result["accounts"]:
        assert account["git_repository"] is None
        assert not GitDestination.objects.filter(channel_id=account["channels"]["git"]).exists()
        post = published_git_post(account)
        assert post.published_at is not None
    assert not (var_dir / "demo-git").exists()
    assert not PublicationJob.objects.exists()


def test_a_seed_run_by_hand_after_make_runs_reports_the_git_channels_repository(settings, var_dir):
    """make run seeds with local repositories allowed; the README's tour runs seed_demo --json by
    hand, without them: the channel keeps its repository, and the JSON says which it is."""
    settings.GIT_ALLOW_LOCAL_REPOSITORIES = True
    first = seed_demo()
    jobs = PublicationJob.objects.count()
    settings.GIT_ALLOW_LOCAL_REPOSITORIES = False

    second = seed_demo()

    for before, after in zip(first["accounts"], second["accounts"], strict=True):
        assert (
            after["git_repository"]
            == before["git_repository"]
            == str(var_dir / "demo-git" / f"account-{after['id']}.git")
        )
        assert GitDestination.objects.get(channel_id=after["channels"]["git"]).repository_url == after["git_repository"]
        assert len(commits(after["git_repository"])) == 1
    assert PublicationJob.objects.count() == jobs
