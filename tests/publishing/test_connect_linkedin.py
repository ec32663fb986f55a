"""`manage.py connect_linkedin`: a LinkedIn channel connected from a script with a token made in
LinkedIn's developer portal, read from an environment variable, against the local fake of LinkedIn.
The token is never printed: not in the JSON, not in an error."""

import json
import sys
from io import StringIO

import pytest
from django.core.management import CommandError, call_command, execute_from_command_line
from django.db import connections

from apps.posts.editor_status import post_publish_now
from apps.posts.services import post_create
from apps.publishing.linkedin.models import LinkedInConnection
from apps.publishing.models import JobState, PublicationJob
from apps.publishing.services import channel_run
from tests.conftest import json_error
from tests.factories import ChannelFactory

pytestmark = pytest.mark.django_db

PAGE = "urn:li:organization:2414183"


@pytest.fixture
def channel(linkedin):
    return ChannelFactory(platform="linkedin")


@pytest.fixture
def token(linkedin, monkeypatch) -> str:
    """A portal token of Ada Lovelace's (abc123), in LI_TOKEN."""
    value = linkedin.issue_token()["access_token"]
    monkeypatch.setenv("LI_TOKEN", value)
    return value


def connect(*args) -> tuple[int, str]:
    """call_command("connect_linkedin", ...): (exit code, stdout)."""
    out = StringIO()
    try:
        call_command("connect_linkedin", *(str(arg) for arg in args), stdout=out)
    except SystemExit as exit:
        return exit.code, out.getvalue()
    return 0, out.getvalue()


def test_connect_linkedin_stores_the_token_and_prints_the_connection_without_it(channel, token, capsys):
    code, out = connect(channel.pk, "--token-env", "LI_TOKEN", "--json")

    assert code == 0
    printed = json.loads(out)
    assert printed["channel_id"] == channel.pk
    assert printed["member_urn"] == "urn:li:person:abc123"
    assert printed["member_name"] == "Ada Lovelace"
    assert printed["author"] == "urn:li:person:abc123" and printed["organization_urn"] is None
    assert printed["organizations"] == [{"urn": PAGE, "name": "Devtestco"}]
    assert printed["needs_reconnect"] is False
    err = capsys.readouterr().err
    assert token not in out and token not in err and "access_token" not in out
    connection = LinkedInConnection.objects.get(channel=channel)
    assert token not in connection.access_token_encrypted and connection.access_token() == token
    assert connection.connected_by == "manage.py connect_linkedin"


def test_connect_linkedin_with_organization_posts_as_that_page(channel, token, linkedin):
    code, out = connect(channel.pk, "--token-env", "LI_TOKEN", "--organization", PAGE, "--json")

    assert code == 0
    assert json.loads(out)["author"] == PAGE
    assert LinkedInConnection.objects.get(channel=channel).author_name == "Devtestco"
    post = post_create(channel=channel, title="Hello from the page", body="Our news.")
    post_publish_now(post_id=post.pk)
    channel_run(channel.pk)
    [made] = linkedin.posts.values()
    assert made["author"] == PAGE


def test_connect_linkedin_without_json_says_in_one_sentence_whom_the_channel_posts_as(channel, token):
    code, out = connect(channel.pk, "--token-env", "LI_TOKEN")

    assert code == 0
    assert out.startswith(f"Channel {channel.pk} posts to LinkedIn as Ada Lovelace (access of Ada Lovelace")
    assert token not in out


def test_a_page_the_member_does_not_administer_is_refused(channel, token, capsys):
    code, out = connect(channel.pk, "--token-env", "LI_TOKEN", "--organization", "urn:li:organization:1", "--json")

    assert (code, out) == (1, "")
    error = json_error(capsys.readouterr().err)
    assert error["message"].endswith("The connected member does not administer urn:li:organization:1.")
    assert error["details"]["field"] == "organization_urn"
    assert not LinkedInConnection.objects.filter(channel=channel).exists()


@pytest.mark.parametrize(
    ("case", "code", "message"),
    [
        ("unknown channel", "not_found", "No channel with id 999999999."),
        ("empty variable", "missing_token", "The environment variable LI_TOKEN is not set or empty."),
        ("missing variable", "missing_token", "The environment variable LI_TOKEN is not set or empty."),
        ("git channel", "invalid_platform", "Only LinkedIn channels connect to LinkedIn; this channel is git."),
        (
            "revoked token",
            "linkedin_refused",
            "LinkedIn did not accept the access token: The token used in the request has been revoked by the user",
        ),
    ],
)
def test_a_failure_is_json_on_stderr_with_exit_code_1_and_the_same_sentence_without_json(
    case, code, message, channel, token, linkedin, monkeypatch, capsys
):
    target = channel
    if case == "unknown channel":
        target = type("Missing", (), {"pk": 999999999})
    elif case == "empty variable":
        monkeypatch.setenv("LI_TOKEN", "   ")
    elif case == "missing variable":
        monkeypatch.delenv("LI_TOKEN")
    elif case == "git channel":
        target = ChannelFactory(platform="git")
    elif case == "revoked token":
        linkedin.revoke(token)

    exit_code, out = connect(target.pk, "--token-env", "LI_TOKEN", "--json")

    assert (exit_code, out) == (1, "")
    err = capsys.readouterr().err
    assert json_error(err) == {"code": code, "message": message}
    assert token not in err
    assert not LinkedInConnection.objects.exists()
    with pytest.raises(CommandError) as raised:
        call_command("connect_linkedin", str(target.pk), "--token-env", "LI_TOKEN", stdout=StringIO())
    assert str(raised.value) == message


@pytest.mark.parametrize(
    "args",
    [["--json"], ["not-a-number", "--token-env", "LI_TOKEN", "--json"], ["1", "--json", "--no-such-option"]],
    ids=["no token-env", "channel id not a number", "unknown option"],
)
def test_a_usage_error_with_json_is_json_on_stderr_with_exit_code_2(args, monkeypatch, capsys, db):
    # Run as manage.py runs it: the command reads --json from the process's own arguments.
    monkeypatch.setattr(connections, "close_all", lambda: None)
    argv = ["manage.py", "connect_linkedin", *args]
    monkeypatch.setattr(sys, "argv", argv)

    with pytest.raises(SystemExit) as exited:
        execute_from_command_line(argv)

    assert exited.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    error = json_error(err)
    assert error["code"] == "usage" and error["message"]


def test_connecting_with_the_command_resumes_a_job_that_failed_for_want_of_a_connection(
    channel, token, linkedin, django_capture_on_commit_callbacks
):
    post = post_create(channel=channel, title="Waiting for LinkedIn", body="Written before connecting.")
    post_publish_now(post_id=post.pk)
    channel_run(channel.pk)
    job = PublicationJob.objects.get(post_id=post.pk)
    assert job.state == JobState.FAILED and job.last_error.startswith("Connect LinkedIn:")
    assert linkedin.posts == {}

    with django_capture_on_commit_callbacks(execute=True):
        assert connect(channel.pk, "--token-env", "LI_TOKEN", "--json")[0] == 0
    channel_run(channel.pk)

    job.refresh_from_db()
    post.refresh_from_db()
    assert job.state == JobState.SUCCEEDED
    [urn] = linkedin.posts
    assert job.reference == urn
    assert post.publication_status == "published"
