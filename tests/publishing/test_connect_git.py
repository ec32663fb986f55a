"""`manage.py connect_git`: a git channel set up from a script. Run as manage.py runs it
(execute_from_command_line with the process's argv), so exit codes and what reaches stdout and
stderr are those a script sees."""

import json
import os
import subprocess
import sys
from io import StringIO

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.conf import settings
from django.core.management import CommandError, call_command

from apps.core import crypto
from apps.posts.editor_status import post_publish_now
from apps.posts.services import post_create
from apps.publishing.git.models import GitDestination
from apps.publishing.services import channel_run
from tests.conftest import database_url, json_error, requires_postgres
from tests.factories import ChannelFactory
from tests.publishing.conftest import files, history

pytestmark = pytest.mark.django_db

TOKEN = "ghp_SecretTokenFromTheEnvironment0123"  # a test value
SECRET_FIELDS = {"token", "token_encrypted", "ssh_key", "ssh_key_encrypted"}


@pytest.fixture
def run(manage):
    """Run `manage.py connect_git ARGS`; (exit code, stdout, stderr)."""
    return lambda *args: manage("connect_git", *args)


@pytest.fixture
def git_only(db):
    return ChannelFactory(platform="git")


@pytest.fixture
def token_env(monkeypatch):
    monkeypatch.setenv("SITE_DEPLOY_TOKEN", TOKEN)
    return "SITE_DEPLOY_TOKEN"


def ed25519_pair() -> tuple[str, str]:
    """(private key in OpenSSH format, public key line)."""
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    ).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return private, public.decode()


def test_connect_git_sets_a_channel_up_with_a_token_from_the_environment(run, git_only, token_env, private_targets):
    code, out, err = run(
        git_only.pk, "--url", "https://git.example.com/team/site.git", "--token-env", token_env, "--json"
    )

    assert (code, err) == (0, "")
    printed = json.loads(out)
    destination = GitDestination.objects.get(channel=git_only)
    assert printed == {
        "channel_id": git_only.pk,
        "repository_url": "https://git.example.com/team/site.git",
        "branch": "main",
        "path_template": "content/posts/{slug}.md",
        "media_path": "static/images/{year}/{name}",
        "media_url": "/images/{year}/{name}",
        "media_folder": "static/images",
        "public_folder": "/images",
        "author_name": "Content Publishing",
        "author_email": "publishing@example.com",
        "token_username": "x-access-token",
        "has_token": True,
        "has_ssh_key": False,
        "has_known_hosts": False,
        "unpublish_keeps_file": False,
        "post_url_template": "",
        "commit_url_template": "",
    }
    assert not SECRET_FIELDS & set(printed)
    assert TOKEN not in out and TOKEN not in destination.token_encrypted
    assert crypto.decrypt(destination.token_encrypted) == TOKEN


def test_connect_git_without_json_says_in_one_sentence_what_it_set_up(run, git_only, token_env, private_targets):
    code, out, err = run(git_only.pk, "--url", "https://git.example.com/team/site.git", "--token-env", token_env)

    assert (code, err) == (0, "")
    assert out == (
        f"Channel {git_only.pk} commits to https://git.example.com/team/site.git (main, content/posts/{{slug}}.md).\n"
    )
    assert GitDestination.objects.get(channel=git_only).token() == TOKEN


def test_a_second_run_with_other_options_changes_the_set_up_and_keeps_the_token(
    run, git_only, token_env, private_targets
):
    run(
        git_only.pk,
        "--url",
        "https://git.example.com/team/site.git",
        "--token-env",
        token_env,
        "--author-name",
        "Site Bot",
        "--author-email",
        "bot@example.com",
        "--json",
    )

    code, out, err = run(
        git_only.pk,
        "--url",
        "https://git.example.com/team/new-site.git",
        "--branch",
        "pages",
        "--path",
        "blog/{year}/{slug}.md",
        "--json",
    )

    assert (code, err) == (0, "")
    printed = json.loads(out)
    assert (printed["repository_url"], printed["branch"], printed["path_template"]) == (
        "https://git.example.com/team/new-site.git",
        "pages",
        "blog/{year}/{slug}.md",
    )
    # What this run did not name stays as the first run set it.
    assert (printed["author_name"], printed["author_email"], printed["has_token"]) == (
        "Site Bot",
        "bot@example.com",
        True,
    )
    assert GitDestination.objects.count() == 1
    assert GitDestination.objects.get(channel=git_only).token() == TOKEN


def test_a_channel_set_up_by_connect_git_publishes_into_the_repository(run, git_only, bare_repo):
    code, _, err = run(git_only.pk, "--url", bare_repo, "--path", "posts/{id}-{slug}.md")
    assert (code, err) == (0, "")
    post = post_create(channel=git_only, title="From a script", body="Set up by connect_git.")

    post_publish_now(post_id=post.pk)
    channel_run(git_only.pk)

    assert list(files(bare_repo)) == [f"posts/{post.pk}-from-a-script.md"]
    assert history(bare_repo)[0].message.decode().startswith("Publish “From a script”")


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["424242", "--url", "https://git.example.com/a/b.git"], "not_found", "No channel with id 424242."),
        (["{blog}", "--url", "https://git.example.com/a/b.git"], "invalid_platform", "Only git channels publish"),
        (["{git}", "--url", "ftp://git.example.com/a/b.git"], "VALIDATION_ERROR", "is not a repository URL"),
        (
            ["{git}", "--url", "https://git.example.com/a/b.git", "--path", "../{slug}.md"],
            "VALIDATION_ERROR",
            "empty, '.' and '..' parts are refused",
        ),
        (
            ["{git}", "--url", "https://git.example.com/a/b.git", "--token-env", "NO_SUCH_TOKEN_VARIABLE"],
            "missing_token",
            "The environment variable NO_SUCH_TOKEN_VARIABLE is not set or empty.",
        ),
    ],
)
def test_errors_are_json_on_stderr_with_a_non_zero_exit_when_json_is_asked_for(
    run, git_only, private_targets, monkeypatch, args, code, message
):
    monkeypatch.delenv("NO_SUCH_TOKEN_VARIABLE", raising=False)
    blog = ChannelFactory(platform="blog")
    args = [arg.replace("{git}", str(git_only.pk)).replace("{blog}", str(blog.pk)) for arg in args]

    exit_code, out, err = run(*args, "--json")

    assert exit_code != 0 and out == ""
    error = json_error(err)
    assert error["code"] == code and message in error["message"]
    assert not GitDestination.objects.exists()


def test_a_bad_url_names_the_field_in_the_json_error(run, git_only):
    exit_code, _, err = run(git_only.pk, "--url", "not a repository", "--json")

    assert exit_code == 1
    error = json_error(err)
    assert error["details"]["field"] == "repository_url"
    assert error["message"].startswith("repository_url: ")


def test_a_missing_url_is_a_json_usage_error_when_json_is_asked_for(run, git_only):
    exit_code, out, err = run(git_only.pk, "--json")

    assert exit_code != 0 and out == ""
    error = json_error(err)
    assert error["code"] == "usage" and "--url" in error["message"]
    assert not GitDestination.objects.exists()


def test_a_token_and_an_ssh_key_together_are_a_json_usage_error(run, git_only, token_env, tmp_path):
    key_file = tmp_path / "key"
    key_file.write_text(ed25519_pair()[0])

    exit_code, _, err = run(
        git_only.pk,
        "--url",
        "git@git.example.com:a/b.git",
        "--token-env",
        token_env,
        "--ssh-key-file",
        key_file,
        "--json",
    )

    assert exit_code != 0
    assert json_error(err)["code"] == "usage" and "not allowed with argument" in json_error(err)["message"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["424242", "--url", "https://git.example.com/a/b.git"], "No channel with id 424242."),
        (["{git}", "--url", "ftp://git.example.com/a/b.git"], "is not a repository URL"),
        (
            ["{git}", "--url", "https://git.example.com/a/b.git", "--token-env", "NO_SUCH_TOKEN_VARIABLE"],
            "NO_SUCH_TOKEN_VARIABLE is not set or empty",
        ),
        (["{git}"], "the following arguments are required: --url"),
    ],
)
def test_without_json_errors_are_a_plain_command_error(git_only, private_targets, monkeypatch, args, message):
    monkeypatch.delenv("NO_SUCH_TOKEN_VARIABLE", raising=False)

    with pytest.raises(CommandError, match=message):
        call_command("connect_git", *(arg.replace("{git}", str(git_only.pk)) for arg in args))

    assert not GitDestination.objects.exists()


def test_without_json_a_failure_exits_non_zero_with_the_sentence_on_stderr(run, git_only):
    exit_code, out, err = run(git_only.pk, "--url", "ftp://git.example.com/a/b.git")

    assert exit_code == 1 and out == ""
    assert err.startswith("CommandError: repository_url: ") and "{" not in err


def test_an_ssh_deploy_key_and_the_hosts_keys_are_stored_the_key_encrypted(run, git_only, tmp_path, private_targets):
    private_key, _ = ed25519_pair()
    _, host_key = ed25519_pair()
    key_file, hosts_file = tmp_path / "deploy_key", tmp_path / "known_hosts"
    key_file.write_text(private_key)
    hosts_file.write_text(f"git.example.com {host_key}\n")

    code, out, err = run(
        git_only.pk,
        "--url",
        "git@git.example.com:team/site.git",
        "--ssh-key-file",
        key_file,
        "--known-hosts-file",
        hosts_file,
        "--json",
    )

    assert (code, err) == (0, "")
    printed = json.loads(out)
    assert (printed["has_ssh_key"], printed["has_known_hosts"], printed["has_token"]) == (True, True, False)
    destination = GitDestination.objects.get(channel=git_only)
    assert "PRIVATE KEY" not in destination.ssh_key_encrypted
    assert crypto.decrypt(destination.ssh_key_encrypted) == private_key.strip()
    assert destination.known_hosts == f"git.example.com {host_key}"
    key_body = private_key.splitlines()[1]
    assert key_body not in out and key_body not in err


def test_an_ssh_repository_without_the_hosts_keys_is_refused(run, git_only, tmp_path, private_targets):
    key_file = tmp_path / "deploy_key"
    key_file.write_text(ed25519_pair()[0])

    code, _, err = run(
        git_only.pk, "--url", "ssh://git@git.example.com/team/site.git", "--ssh-key-file", key_file, "--json"
    )

    assert code == 1
    error = json_error(err)
    assert error["details"]["field"] == "known_hosts" and "ssh-keyscan git.example.com" in error["message"]
    assert not GitDestination.objects.exists()


def test_a_file_that_is_not_a_private_key_is_refused(run, git_only, tmp_path, private_targets):
    _, host_key = ed25519_pair()
    key_file, hosts_file = tmp_path / "id_ed25519.pub", tmp_path / "known_hosts"
    key_file.write_text(host_key)  # the public half, a common slip
    hosts_file.write_text(f"git.example.com {host_key}\n")

    code, _, err = run(
        git_only.pk,
        "--url",
        "git@git.example.com:team/site.git",
        "--ssh-key-file",
        key_file,
        "--known-hosts-file",
        hosts_file,
        "--json",
    )

    assert code == 1
    assert json_error(err)["details"]["field"] == "ssh_key"
    assert not GitDestination.objects.exists()


def test_an_unreadable_key_file_is_a_json_error(run, git_only, tmp_path, private_targets):
    code, _, err = run(
        git_only.pk,
        "--url",
        "git@git.example.com:team/site.git",
        "--ssh-key-file",
        tmp_path / "no-such-key",
        "--known-hosts-file",
        tmp_path / "no-such-hosts",
        "--json",
    )

    assert code == 1
    error = json_error(err)
    assert error["code"] == "unreadable_file" and "no-such-key" in error["message"]


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_a_script_runs_connect_git_as_its_own_process():
    channel = ChannelFactory(platform="git")
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "SITE_DEPLOY_TOKEN": TOKEN,
        "FERNET_KEYS": ",".join(settings.FERNET_KEYS),
        "WEBHOOK_ALLOW_PRIVATE_TARGETS": "true",
    }

    def manage(*args) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "manage.py", "connect_git", *(str(arg) for arg in args)],
            env=env,
            cwd=settings.BASE_DIR,
            capture_output=True,
            text=True,
            timeout=60,
        )

    done = manage(
        channel.pk, "--url", "https://git.example.com/team/site.git", "--token-env", "SITE_DEPLOY_TOKEN", "--json"
    )
    refused = manage(channel.pk, "--url", "ftp://git.example.com/team/site.git", "--json")
    usage = manage(channel.pk, "--json")

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["has_token"] is True
    assert GitDestination.objects.get(channel=channel).token() == TOKEN
    assert refused.returncode == 1 and refused.stdout == ""
    assert json.loads(refused.stderr)["error"]["details"]["field"] == "repository_url"
    assert usage.returncode == 2 and json.loads(usage.stderr)["error"]["code"] == "usage"
    for result in (done, refused, usage):
        assert TOKEN not in result.stdout + result.stderr


def test_a_second_run_without_branch_or_path_keeps_those_set_up(bare_repo):
    channel = ChannelFactory(platform="git")
    call_command(
        "connect_git",
        str(channel.pk),
        "--url",
        str(bare_repo),
        "--branch",
        "pages",
        "--path",
        "posts/{id}.md",
        stdout=StringIO(),
    )
    call_command(
        "connect_git", str(channel.pk), "--url", str(bare_repo), "--token-username", "oauth2", stdout=StringIO()
    )
    destination = GitDestination.objects.get(channel=channel)
    assert (destination.branch, destination.path_template, destination.token_username) == (
        "pages",
        "posts/{id}.md",
        "oauth2",
    )
