"""Real git repositories for the publishing tests: local bare repositories made in the test, read
back with dulwich."""

from pathlib import Path

import pytest
import yaml
from dulwich.object_store import iter_tree_contents
from dulwich.repo import Repo

from apps.publishing.git.services import GitSettings, git_destination_save
from apps.publishing.linkedin.services import connection_save
from tests.factories import ChannelFactory
from tests.publishing.bluesky_fake import bluesky, bluesky_channel  # noqa: F401 (fixtures)
from tests.publishing.linkedin_fake import FakeLinkedIn

# The Mastodon fake's fixtures, defined beside it.
from tests.publishing.mastodon_fake import mastodon, mastodon_channel  # noqa: F401


def allow_local_repositories(settings, tmp_path: Path) -> None:
    """Git channels may push to repositories on this machine (the tests' bare ones), cloned under tmp_path."""
    settings.GIT_ALLOW_LOCAL_REPOSITORIES = True
    settings.GIT_CACHE_DIR = tmp_path / "git-cache"


@pytest.fixture(autouse=True)
def _local_repositories(settings, tmp_path):
    allow_local_repositories(settings, tmp_path)
    settings.PUBLISH_RETRY_DELAYS = [60, 300, 1800, 7200]


def make_bare_repository(path: Path, branch: str = "main") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    repo = Repo.init_bare(str(path))
    repo.refs.set_symbolic_ref(b"HEAD", f"refs/heads/{branch}".encode())
    repo.close()
    return path


@pytest.fixture
def bare_repo(tmp_path) -> Path:
    return make_bare_repository(tmp_path / "site.git")


def git_channel_to(repository: Path, **fields):
    """A git channel (made with `fields`) set up to commit to `repository` (branch main, the default
    path template)."""
    channel = ChannelFactory(platform="git", **fields)
    git_destination_save(
        channel=channel,
        settings=GitSettings(
            repository_url=str(repository), author_name="Pat Publisher", author_email="pat@example.com"
        ),
    )
    return channel


@pytest.fixture
def git_channel(db, bare_repo):
    """A git channel set up to commit to `bare_repo`."""
    return git_channel_to(bare_repo)


def head(path: Path, branch: str = "main") -> bytes | None:
    with Repo(str(path)) as repo:
        return repo.refs.as_dict().get(f"refs/heads/{branch}".encode())


def files(path: Path, branch: str = "main") -> dict[str, bytes]:
    """The files at the branch's head: path -> content."""
    with Repo(str(path)) as repo:
        commit = head(path, branch)
        if commit is None:
            return {}
        tree = repo[commit].tree
        return {
            entry.path.decode(): repo.object_store[entry.sha].data
            for entry in iter_tree_contents(repo.object_store, tree)
        }


def history(path: Path, branch: str = "main") -> list:
    """The branch's commits, newest first (dulwich Commit objects)."""
    with Repo(str(path)) as repo:
        commit = head(path, branch)
        return [] if commit is None else [entry.commit for entry in repo.get_walker(include=[commit])]


def front_matter(content: bytes) -> tuple[dict, str]:
    """(front matter, body) of a published file."""
    text = content.decode()
    assert text.startswith("---\n")
    end = text.index("\n---\n", 3)
    return yaml.safe_load(text[4:end]), text[end + 5 :]


@pytest.fixture
def linkedin(settings):
    """A fake of LinkedIn's OAuth and REST endpoints (tests/publishing/linkedin_fake.py), with the
    LINKEDIN_* settings pointing at it."""
    with FakeLinkedIn() as fake:
        settings.LINKEDIN_API_URL, settings.LINKEDIN_AUTH_URL = fake.url, fake.auth_url
        settings.LINKEDIN_CLIENT_ID, settings.LINKEDIN_CLIENT_SECRET = fake.client_id, fake.client_secret
        settings.LINKEDIN_API_VERSION = fake.version
        yield fake


@pytest.fixture
def linkedin_channel(db, linkedin):
    """A LinkedIn channel connected to the fake's member Ada Lovelace (abc123), posting as her."""
    channel = ChannelFactory(platform="linkedin")
    connection_save(channel=channel, token=linkedin.issue_token(), connected_by="tests")
    return channel
