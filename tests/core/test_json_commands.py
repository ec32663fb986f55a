"""Management commands with `--json`: the result as JSON on stdout, every error as one JSON line
`{"error": {"code", "message", "details"?}}` on stderr with a non-zero exit (2 for usage). The
commands are found, not listed: a new command with --json is held to this too."""

import json
import os
import subprocess
import sys

import pytest
from cryptography.fernet import Fernet
from django.conf import settings
from django.core.management import get_commands, load_command_class
from django.utils import timezone
from rest_framework.test import APIClient

from apps.channels.models import Channel
from tests.factories import ChannelFactory, GitDestinationFactory, PostFactory, UserFactory

# What scripts read: these at least answer in JSON.
SCRIPTED = {
    "add_webhook",
    "connect_git",
    "connect_linkedin",
    "create_api_key",
    "recount_posts",
    "rotate_credentials",
    "run_content_plan",
    "seed_demo",
}
UNREACHABLE_DATABASE = "postgres://nobody@127.0.0.1:1/nothing"


def json_commands() -> list[str]:
    """The project's commands (apps/*) whose parser has --json."""
    names = []
    for name, app in sorted(get_commands().items()):
        if not app.startswith("apps."):
            continue
        parser = load_command_class(app, name).create_parser("manage.py", name)
        if any("--json" in action.option_strings for action in parser._actions):
            names.append(name)
    return names


def required_arguments(name: str) -> list[str]:
    """Arguments that get past `name`'s parser: "1" for each required positional and option."""
    parser = load_command_class(get_commands()[name], name).create_parser("manage.py", name)
    args = []
    for action in parser._actions:
        if action.required and action.option_strings:
            args += [action.option_strings[0], "1"]
        elif action.required:
            args.append("1")
    return args


def stderr_records(err: str) -> list[dict]:
    """What a --json run wrote to stderr: every line a JSON object."""
    return [json.loads(line) for line in err.splitlines()]


def json_error(err: str) -> dict:
    """The error of a failed --json run: stderr's last line (log records, JSON too, may come before it)."""
    *logged, last = stderr_records(err)
    assert all("error" not in record for record in logged)
    return last["error"]


def test_the_commands_scripts_read_have_json():
    assert set(json_commands()) >= SCRIPTED


@pytest.mark.parametrize("name", json_commands())
def test_a_usage_error_of_a_json_command_is_json_on_stderr_with_exit_2(name, manage):
    code, out, err = manage(name, *required_arguments(name), "--json", "--no-such-option")
    assert (code, out) == (2, "")
    error = json_error(err)
    assert error["code"] == "usage"
    assert "--no-such-option" in error["message"]


@pytest.mark.parametrize("name", json_commands())
def test_a_json_command_that_cannot_reach_its_database_says_so_in_json_on_stderr(name):
    env = {key: value for key, value in os.environ.items() if not key.startswith("DJANGO_")}
    result = subprocess.run(
        [sys.executable, "manage.py", name, *required_arguments(name), "--json"],
        env={**env, "DATABASE_URL": UNREACHABLE_DATABASE},
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    error = json_error(result.stderr)
    assert error["code"] == "internal"
    assert "OperationalError" in error["message"]


# --- each command's own failures ---


@pytest.mark.django_db
def test_create_api_key_prints_the_key_as_json_and_it_works(manage):
    owner = UserFactory(email="owner@example.com")
    code, out, err = manage(
        "create_api_key",
        "--account",
        str(owner.account_id),
        "--user",
        "OWNER@example.com",
        "--name",
        "ci",
        "--scopes",
        "read:posts",
        "--expires-in",
        "7",
        "--json",
    )
    assert (code, err) == (0, "")
    created = json.loads(out)
    assert set(created) == {"id", "key", "name", "scopes", "expires_at", "account_id", "user"}
    assert (created["name"], created["scopes"], created["user"]) == ("ci", ["read:posts"], "owner@example.com")
    assert created["expires_at"].endswith("Z")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {created['key']}")
    assert client.get("/v1/me").json()["data"]["token"]["expires_at"] == created["expires_at"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "exit_code", "code", "message"),
    [
        (["--account", "999999", "--user", "owner@example.com"], 1, "not_found", "No account with id 999999"),
        (["--user", "stranger@example.com"], 1, "not_found", "No user 'stranger@example.com' in account {account}"),
        (["--user", "owner@example.com", "--scopes", "write:all"], 1, "VALIDATION_ERROR", "scopes: Unknown scopes"),
        (["--user", "owner@example.com", "--expires-in", "0"], 2, "usage", "must be a positive number of days"),
    ],
    ids=["unknown account", "user of another account", "unknown scope", "expiry not in the future"],
)
def test_create_api_key_refuses_bad_input_in_json(args, exit_code, code, message, manage):
    owner = UserFactory(email="owner@example.com")
    UserFactory(email="stranger@example.com")
    if "--account" not in args:
        args = ["--account", str(owner.account_id), *args]
    result = manage("create_api_key", *args, "--name", "ci", "--json")
    assert result[:2] == (exit_code, "")
    error = json_error(result[2])
    assert error["code"] == code
    assert message.format(account=owner.account_id) in error["message"]


@pytest.mark.django_db
def test_recount_posts_dry_run_prints_the_drift_and_fails_in_json_and_a_run_fixes_it(manage):
    drifted = ChannelFactory(title="Drifted")
    PostFactory.create_batch(3, channel=drifted)
    Channel.objects.filter(pk=drifted.pk).update(posts_count=10)
    expected = [{"channel_id": drifted.pk, "title": "Drifted", "stored": 10, "counted": 3}]

    code, out, err = manage("recount_posts", "--dry-run", "--json")
    assert code == 1
    assert json.loads(out) == {"checked": 1, "fixed": False, "drifted": expected}
    assert json_error(err) == {
        "code": "drift",
        "message": "1 of 1 channel(s) drifted; run without --dry-run to fix them.",
        "details": {"channel_ids": [drifted.pk]},
    }

    code, out, err = manage("recount_posts", "--json")
    assert (code, err) == (0, "")
    assert json.loads(out) == {"checked": 1, "fixed": True, "drifted": expected}
    assert Channel.objects.get(pk=drifted.pk).posts_count == 3


@pytest.mark.django_db
def test_rotate_credentials_reports_a_credential_no_key_opens_in_json(manage, settings):
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.FERNET_KEYS = [old]
    destination = GitDestinationFactory(token="tok")
    settings.FERNET_KEYS = [new]

    code, out, err = manage("rotate_credentials", "--json")
    assert code == 1
    unreadable = [f"publishing_git.GitDestination.token_encrypted of git destination {destination.pk}"]
    assert json.loads(out)["unreadable"] == unreadable
    error = json_error(err)
    assert error["code"] == "unreadable_credentials"
    assert error["details"] == {"unreadable": unreadable}


@pytest.mark.django_db
def test_run_content_plan_prints_what_moved_in_json_and_logs_json_lines_on_stderr(manage):
    PostFactory(channel=ChannelFactory(platform="api"), publication_status="scheduled", scheduled_at=timezone.now())
    code, out, err = manage("run_content_plan", "--json")
    assert code == 0
    assert json.loads(out) == {"moved": 1, "publishing_pending": 1, "published": 0, "handed_over": 0}
    [record] = stderr_records(err)
    assert (record["logger"], record["level"]) == ("apps.posts.content_plan", "INFO")
    assert "moved=1" in record["message"]
    # The plain format is back for what follows.
    code, out, err = manage("run_content_plan")
    assert out == "Moved 0 post(s): 0 to publishing_pending, 0 to published.\n"
    assert " INFO apps.posts.content_plan " in err


@pytest.mark.django_db
def test_seed_demo_if_empty_on_data_prints_the_same_shape_with_nothing_in_it(manage):
    UserFactory()
    code, out, err = manage("seed_demo", "--if-empty", "--json")
    assert (code, err) == (0, "")
    assert json.loads(out) == {"site_url": settings.SITE_URL, "accounts": [], "admin_login": None}


@pytest.mark.django_db
def test_a_bug_in_a_json_command_is_json_on_stderr_and_traceback_shows_it(manage, monkeypatch):
    def broken():
        raise RuntimeError("the plan is broken")

    monkeypatch.setattr("apps.posts.management.commands.run_content_plan.content_plan_run", broken)
    code, out, err = manage("run_content_plan", "--json")
    assert (code, out) == (1, "")
    assert json_error(err) == {"code": "internal", "message": "RuntimeError: the plan is broken"}
    with pytest.raises(RuntimeError, match="the plan is broken"):
        manage("run_content_plan", "--json", "--traceback")
