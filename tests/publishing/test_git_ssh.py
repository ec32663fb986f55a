"""The git destination over ssh://, against a real SSH git server started by the test
(tests/publishing/ssh_server.py: asyncssh in front of `git upload-pack` / `git receive-pack`),
reached with the `ssh` client exactly as production runs it: the channel's deploy key, and the
host's key checked against the channel's known hosts and nothing else (never accept-new)."""

import logging
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

from apps.core.errors import InvalidInput
from apps.posts.editor_status import post_publish_now
from apps.posts.services import post_create, post_update_content
from apps.publishing import services as publishing_services
from apps.publishing.git.models import GitDestination
from apps.publishing.git.remote import Remote, parse_remote
from apps.publishing.git.services import GitSettings, git_destination_check, git_destination_save
from apps.publishing.models import PublicationJob
from apps.publishing.services import channel_run
from tests.factories import ChannelFactory
from tests.publishing.conftest import files, front_matter, head, history, make_bare_repository
from tests.publishing.ssh_server import GitSshServer, new_key, private_openssh, public_line

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(shutil.which("git") is None, reason="the test SSH server runs the `git` CLI (package git)"),
    pytest.mark.skipif(
        shutil.which("ssh") is None, reason="the ssh:// transport runs the `ssh` client (package openssh-client)"
    ),
]


HOST_KEY_SENTENCE = "The host key of 127.0.0.1 does not match the known hosts given"
REFUSED_KEY_SENTENCE = "127.0.0.1 refused the private key: add its public half as a deploy key with write access."


@pytest.fixture(autouse=True)
def _setup(settings, monkeypatch):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True  # the server is on 127.0.0.1
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    # The tests run the channels themselves; nothing goes to the broker.
    monkeypatch.setattr(publishing_services, "enqueue_channels", lambda channel_ids: None)


@pytest.fixture
def deploy_key():
    return new_key()


@pytest.fixture
def repo(tmp_path) -> Path:
    return make_bare_repository(tmp_path / "served" / "site.git")


@pytest.fixture
def server(repo, deploy_key):
    with GitSshServer(repo.parent, deploy_key) as server:
        yield server


class _RecordedFolder(tempfile.TemporaryDirectory):
    """A TemporaryDirectory that notes, just before it is removed, what its files held."""

    made: list["_RecordedFolder"] = []

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.contents: dict[str, str] | None = None
        _RecordedFolder.made.append(self)

    def cleanup(self) -> None:
        if self.contents is None and Path(self.name).is_dir():
            self.contents = {p.name: p.read_text() for p in Path(self.name).iterdir() if p.is_file()}
        super().cleanup()


@pytest.fixture
def ssh_folders(monkeypatch) -> list[_RecordedFolder]:
    """The temporary folders made while the test runs (the ssh branch's key and known_hosts files)."""
    monkeypatch.setattr(_RecordedFolder, "made", [])
    monkeypatch.setattr(tempfile, "TemporaryDirectory", _RecordedFolder)
    return _RecordedFolder.made


def ssh_channel(url: str, *, key: str | None, known_hosts: str):
    """A git channel set up for `url` with the private key `key` (OpenSSH format) and `known_hosts`."""
    channel = ChannelFactory(platform="git")
    git_destination_save(
        channel=channel,
        settings=GitSettings(
            repository_url=url, author_name="Pat Publisher", author_email="pat@example.com", known_hosts=known_hosts
        ),
        ssh_key=key,
    )
    return channel


def publish(channel, title: str) -> PublicationJob:
    post = post_create(channel=channel, title=title, body=f"{title}, over SSH.")
    post_publish_now(post_id=post.pk)
    assert channel_run(channel.pk) == 1
    return PublicationJob.objects.get(post_id=post.pk)


def key_lines(key: str) -> list[str]:
    """The secret part of an OpenSSH private key file: its base64 lines."""
    return [line for line in key.splitlines() if "-----" not in line]


# --- publishing over ssh -------------------------------------------------------------------------


def test_a_git_channel_over_ssh_publishes_a_post_as_one_commit_in_the_servers_repository(server, repo, deploy_key):
    channel = ssh_channel(server.url("site.git"), key=private_openssh(deploy_key), known_hosts=server.known_hosts())

    job = publish(channel, "Over SSH")

    assert job.state == "succeeded", job.last_error
    assert job.attempts == 1 and job.last_error == ""
    assert job.reference == head(repo).decode() and job.path == "content/posts/over-ssh.md"
    matter, body = front_matter(files(repo)["content/posts/over-ssh.md"])
    assert matter["title"] == "Over SSH" and matter["id"] == job.post_id and body.strip() == "Over SSH, over SSH."
    [commit] = history(repo)
    assert commit.message.decode().startswith("Publish “Over SSH”\n")
    assert commit.author == b"Pat Publisher <pat@example.com>"
    assert job.channel.posts.get(pk=job.post_id).publication_status == "published"
    # Fetched, then pushed, by the server's git over the SSH connection.
    assert server.commands == ["git-upload-pack", "git-receive-pack"]

    # An update fetches the branch's head over ssh and commits on top of it.
    post = job.channel.posts.get(pk=job.post_id)
    post_update_content(post=post, body="Changed.")
    assert channel_run(channel.pk) == 1
    update = PublicationJob.objects.filter(post_id=post.pk).latest("id")
    assert update.state == "succeeded", update.last_error
    newest, first = history(repo)
    assert newest.parents == [first.id] and newest.message.decode().startswith("Update “Over SSH”\n")
    assert front_matter(files(repo)["content/posts/over-ssh.md"])[1].strip() == "Changed."


def test_test_connection_over_ssh_describes_the_branch_head(server, repo, deploy_key):
    channel = ssh_channel(server.url("site.git"), key=private_openssh(deploy_key), known_hosts=server.known_hosts())
    destination = GitDestination.objects.get(channel=channel)
    assert "the repository is empty" in git_destination_check(destination=destination)

    publish(channel, "Checked")

    assert f"branch 'main' is at {head(repo).decode()[:12]} “Publish “Checked”" in git_destination_check(
        destination=destination
    )


# --- the host's key --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("known_hosts_of", "hint_of"),
    [
        pytest.param(
            lambda server, other: f"git.example.com {public_line(other)}",
            lambda server: (
                f"they hold no key of this host on port {server.port}. Add the output of "
                f"ssh-keyscan -p {server.port} 127.0.0.1, checked"
            ),
            id="only-another-host",
        ),
        pytest.param(
            lambda server, other: f"[127.0.0.1]:{server.port} {public_line(other)}",
            lambda server: f"(it presented {server.host_key.get_fingerprint('sha256')})",
            id="another-key-for-this-host",
        ),
    ],
)
def test_an_unknown_host_key_fails_the_job_for_good_without_trusting_it_or_pushing(
    server, repo, deploy_key, ssh_folders, known_hosts_of, hint_of
):
    known_hosts = known_hosts_of(server, new_key())
    channel = ssh_channel(server.url("site.git"), key=private_openssh(deploy_key), known_hosts=known_hosts)

    job = publish(channel, "Not to an unknown host")

    assert job.state == "failed" and job.attempts == 1, "an error a retry cannot fix fails at once"
    assert HOST_KEY_SENTENCE in job.last_error and hint_of(server) in job.last_error
    assert job.channel.posts.get(pk=job.post_id).publication_status == "draft"
    # The connection stopped at the host key: no git command ran, nothing was pushed.
    assert server.commands == [] and head(repo) is None
    # Never accept-new: neither the channel's known hosts nor the file ssh was given gained the key.
    assert GitDestination.objects.get(channel=channel).known_hosts == known_hosts
    [given] = [folder.contents for folder in ssh_folders if folder.contents and "known_hosts" in folder.contents]
    assert given["known_hosts"] == known_hosts + "\n"


def test_a_host_whose_key_changed_fails_the_job_for_good_and_keeps_the_repository_as_it_was(server, repo, deploy_key):
    channel = ssh_channel(server.url("site.git"), key=private_openssh(deploy_key), known_hosts=server.known_hosts())
    first = publish(channel, "Before the change")
    assert first.state == "succeeded", first.last_error
    before, commands = head(repo), list(server.commands)

    changed = new_key()
    server.restart(host_key=changed)  # same address and port, another host key
    job = publish(channel, "After the change")

    assert job.state == "failed" and job.attempts == 1, "an error a retry cannot fix fails at once"
    assert HOST_KEY_SENTENCE in job.last_error
    # The fingerprint to compare with the host's published ones.
    assert f"(it presented {changed.get_fingerprint('sha256')})" in job.last_error
    assert job.channel.posts.get(pk=job.post_id).publication_status == "draft"
    assert head(repo) == before and server.commands == commands


# --- the deploy key --------------------------------------------------------------------------------


def test_a_deploy_key_the_server_does_not_accept_fails_the_job_for_good(server, repo):
    channel = ssh_channel(server.url("site.git"), key=private_openssh(new_key()), known_hosts=server.known_hosts())

    job = publish(channel, "With the wrong key")

    assert job.state == "failed" and job.attempts == 1, "an error a retry cannot fix fails at once"
    assert job.last_error == REFUSED_KEY_SENTENCE
    assert job.channel.posts.get(pk=job.post_id).publication_status == "draft"
    assert server.commands == [] and head(repo) is None


def test_a_key_and_known_hosts_pasted_with_windows_line_ends_work(server, repo, deploy_key):
    # A browser sends a textarea's lines with \r\n; ssh reads neither a key nor known hosts with them.
    channel = ssh_channel(
        server.url("site.git"),
        key=private_openssh(deploy_key).replace("\n", "\r\n"),
        known_hosts=f"# {server.url('site.git')}\r\n{server.known_hosts()}\r\n",
    )

    job = publish(channel, "Pasted")

    assert job.state == "succeeded", job.last_error
    assert "content/posts/pasted.md" in files(repo)


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen (package openssh-client)")
def test_a_deploy_key_with_a_passphrase_fails_for_good_saying_so(server, repo, tmp_path):
    key_file = tmp_path / "protected"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "a passphrase", "-f", str(key_file)], check=True)
    channel = ssh_channel(server.url("site.git"), key=key_file.read_text(), known_hosts=server.known_hosts())

    job = publish(channel, "Locked key")

    assert job.state == "failed" and job.attempts == 1
    assert "The private key is protected by a passphrase" in job.last_error
    assert server.commands == [] and head(repo) is None


def test_a_private_key_ssh_cannot_read_fails_for_good_saying_so_without_the_key_files_path(server, repo):
    garbled = "-----BEGIN OPENSSH PRIVATE KEY-----\nbm90IGEga2V5\n-----END OPENSSH PRIVATE KEY-----\n"
    channel = ssh_channel(server.url("site.git"), key=garbled, known_hosts=server.known_hosts())

    job = publish(channel, "Garbled key")

    assert job.state == "failed" and job.attempts == 1
    assert job.last_error.startswith("ssh could not read the private key (")
    assert "cps-ssh-" not in job.last_error and tempfile.gettempdir() not in job.last_error
    assert server.commands == [] and head(repo) is None


def test_the_private_key_is_in_no_error_or_log_and_its_file_is_removed_after_the_job(
    server, repo, deploy_key, ssh_folders, caplog
):
    caplog.set_level(logging.DEBUG)
    good_key, wrong_key = private_openssh(deploy_key), private_openssh(new_key())
    good = ssh_channel(server.url("site.git"), key=good_key, known_hosts=server.known_hosts())
    refused = ssh_channel(server.url("site.git"), key=wrong_key, known_hosts=server.known_hosts())

    succeeded = publish(good, "Published")
    failed = publish(refused, "Refused")

    assert succeeded.state == "succeeded" and failed.state == "failed"
    for key, job in ((good_key, succeeded), (wrong_key, failed)):
        for line in key_lines(key):
            assert line not in job.last_error and line not in caplog.text
        assert "PRIVATE KEY" not in job.last_error and "PRIVATE KEY" not in caplog.text
    # Each job wrote the key to a file of its own for `ssh -i`, and removed it afterwards.
    keys = [folder for folder in ssh_folders if folder.contents and "key" in folder.contents]
    assert [folder.contents["key"] for folder in keys] == [good_key, wrong_key]
    assert not any(Path(folder.name).exists() for folder in ssh_folders)


# --- a host that hangs ----------------------------------------------------------------------------


def test_a_host_that_takes_the_command_and_never_answers_is_cut_off_at_the_jobs_timeout(
    server, repo, deploy_key, settings
):
    # The connection stays up (the server answers ssh's keepalives): only the job's deadline ends it.
    settings.PUBLISH_TIMEOUT = 4
    server.hang = True
    channel = ssh_channel(server.url("site.git"), key=private_openssh(deploy_key), known_hosts=server.known_hosts())
    # Should the deadline not hold, stopping the server ends the test with another error, not a hang.
    watchdog = threading.Timer(120, server.stop)
    watchdog.start()
    try:
        job = publish(channel, "Into the void")
    finally:
        watchdog.cancel()

    assert job.state == "queued" and job.attempts == 1 and job.next_attempt_at is not None, "tried again later"
    assert job.last_error == (
        "The repository did not answer in time (PUBLISH_TIMEOUT, 4 s). "
        f"It will be tried again at {job.next_attempt_at:%Y-%m-%d %H:%M:%S} UTC."
    )
    assert server.commands == ["git-upload-pack"] and head(repo) is None


# --- setting an ssh channel up -------------------------------------------------------------------


def test_an_ssh_repository_without_known_hosts_is_refused_on_the_known_hosts_field(deploy_key):
    channel = ChannelFactory(platform="git")
    with pytest.raises(InvalidInput) as refused:
        git_destination_save(
            channel=channel,
            settings=GitSettings(repository_url="ssh://git@127.0.0.1/site.git", known_hosts="  \n"),
            ssh_key=private_openssh(deploy_key),
        )
    assert refused.value.details["field"] == "known_hosts"
    assert "ssh-keyscan 127.0.0.1" in refused.value.message
    assert not GitDestination.objects.filter(channel=channel).exists()


def test_an_ssh_channel_without_a_deploy_key_says_what_is_missing_when_it_runs(server, repo):
    channel = ssh_channel(server.url("site.git"), key=None, known_hosts=server.known_hosts())

    job = publish(channel, "Without a key")

    assert job.state == "failed" and job.attempts == 1
    assert "needs a private key (a deploy key)" in job.last_error
    assert server.commands == [] and head(repo) is None


@pytest.mark.parametrize(
    ("url", "remote"),
    [
        (
            "git@127.0.0.1:site.git",
            Remote(kind="ssh", url="git@127.0.0.1:site.git", host="127.0.0.1", user="git", path="site.git"),
        ),
        (
            "deploy@git.example.com:owner/site.git",
            Remote(
                kind="ssh",
                url="deploy@git.example.com:owner/site.git",
                host="git.example.com",
                user="deploy",
                path="owner/site.git",
            ),
        ),
        (
            "git.example.com:/srv/site.git",
            Remote(
                kind="ssh",
                url="git.example.com:/srv/site.git",
                host="git.example.com",
                user="git",
                path="/srv/site.git",
            ),
        ),
        ("git@[::1]:site.git", Remote(kind="ssh", url="git@[::1]:site.git", host="::1", user="git", path="site.git")),
    ],
)
def test_the_scp_like_form_names_an_ssh_remote_on_port_22(url, remote):
    parsed = parse_remote(url)
    assert parsed == remote
    # No port of its own: ssh's default, 22 (the address guard checks that port too).
    assert parsed.port is None
