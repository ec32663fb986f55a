"""Credentials of git destinations: encrypted with MultiFernet over FERNET_KEYS (newest first, so
keys rotate), required in production, and never shown anywhere after they are saved: not in a
webhook body, an API response, a job's error, an e-mail, a Settings page or a log line."""

import base64
import json

import pytest
from cryptography.fernet import Fernet, InvalidToken
from django.core import mail

from apps.core import crypto
from apps.posts.editor_status import post_publish_now
from apps.posts.services import post_create
from apps.publishing.git.models import GitDestination
from apps.publishing.models import PublicationJob
from apps.publishing.services import channel_run
from apps.webhooks.models import Delivery, Event
from apps.webhooks.services import delivery_attempt
from tests.conftest import admin_session, free_port, settings_loaded
from tests.factories import (
    AccountFactory,
    AdminUserFactory,
    ApiKeyFactory,
    ChannelFactory,
    GitDestinationFactory,
    WebhookEndpointFactory,
)
from tests.ops.test_production_settings import PRODUCTION, UNSET, start_up_errors
from tests.security.test_secrets import as_text, logs  # noqa: F401 - the fixture

TOKEN = "glpat-VerySecretDeployToken-42xyz"  # a test value
KEY_A = Fernet.generate_key().decode()
KEY_B = Fernet.generate_key().decode()


# --- FERNET_KEYS ------------------------------------------------------------------------------


def test_a_value_encrypted_with_the_old_key_is_read_after_a_new_key_is_put_in_front(settings):
    settings.FERNET_KEYS = [KEY_A]
    stored = crypto.encrypt(TOKEN)
    assert Fernet(KEY_A).decrypt(stored.encode()).decode() == TOKEN

    settings.FERNET_KEYS = [KEY_B, KEY_A]

    assert crypto.decrypt(stored) == TOKEN
    # New values are encrypted with the newest key.
    assert Fernet(KEY_B).decrypt(crypto.encrypt("fresh").encode()) == b"fresh"


def test_reencrypt_moves_a_value_to_the_newest_key_so_the_old_one_can_be_dropped(settings):
    settings.FERNET_KEYS = [KEY_A]
    stored = crypto.encrypt(TOKEN)
    settings.FERNET_KEYS = [KEY_B, KEY_A]

    moved = crypto.reencrypt(stored)

    assert moved != stored
    assert Fernet(KEY_B).decrypt(moved.encode()).decode() == TOKEN
    with pytest.raises(InvalidToken):
        Fernet(KEY_A).decrypt(moved.encode())
    settings.FERNET_KEYS = [KEY_B]
    assert crypto.decrypt(moved) == TOKEN


def test_a_value_no_key_opens_raises_credential_unreadable_with_a_sentence(settings):
    settings.FERNET_KEYS = [KEY_A]
    stored = crypto.encrypt(TOKEN)
    settings.FERNET_KEYS = [KEY_B]

    with pytest.raises(crypto.CredentialUnreadable) as caught:
        crypto.decrypt(stored)
    assert "cannot be read with the configured FERNET_KEYS" in str(caught.value)
    assert "enter the credential again" in str(caught.value)
    with pytest.raises(crypto.CredentialUnreadable, match="cannot be read with the configured FERNET_KEYS"):
        crypto.reencrypt(stored)
    with pytest.raises(crypto.CredentialUnreadable):
        crypto.decrypt("not a fernet token at all")


@pytest.mark.django_db
def test_test_connection_with_a_token_no_key_opens_says_to_enter_it_again(settings, bare_repo):
    settings.FERNET_KEYS = [KEY_A]
    destination = GitDestinationFactory(repository_url=str(bare_repo), token=TOKEN)
    settings.FERNET_KEYS = [KEY_B]
    client = admin_session(AdminUserFactory(account=destination.channel.account))

    response = client.post(f"/admin/publishing_git/gitdestination/{destination.pk}/test-connection/", follow=True)

    [message] = [str(m) for m in response.context["messages"]]
    assert "cannot be read with the configured FERNET_KEYS" in message and "enter the credential again" in message
    # The page still opens, and a new token can be entered over the unreadable one.
    page = client.get(f"/admin/publishing_git/gitdestination/{destination.pk}/change/")
    assert page.status_code == 200


@pytest.mark.django_db
def test_a_job_whose_token_no_key_opens_fails_at_once_with_the_sentence(settings, bare_repo):
    settings.FERNET_KEYS = [KEY_A]
    destination = GitDestinationFactory(repository_url=str(bare_repo), token=TOKEN)
    settings.FERNET_KEYS = [KEY_B]
    post = post_create(channel=destination.channel, title="Locked out", body="x")
    post_publish_now(post_id=post.pk)

    channel_run(destination.channel_id)

    job = PublicationJob.objects.get(post_id=post.pk)
    assert job.state == "failed" and job.attempts == 1
    assert "cannot be read with the configured FERNET_KEYS" in job.last_error


# --- Production start-up ----------------------------------------------------------------------

SHOW_KEYS = "import config.settings as s; print(len(s.FERNET_KEYS))"
WITHOUT_KEYS = (*UNSET, "FERNET_")


def test_production_refuses_to_start_without_fernet_keys():
    env = {name: value for name, value in PRODUCTION.items() if name != "FERNET_KEYS"}

    assert settings_loaded(SHOW_KEYS, env, unset=WITHOUT_KEYS).stdout.split() == ["0"]
    [error] = start_up_errors(FERNET_KEYS=[])
    assert error.startswith("cps.E006 FERNET_KEYS must be set when ENVIRONMENT=production")


# Named, not shown: the keys are made anew in each process, and xdist's workers must collect the same tests.
@pytest.mark.parametrize(
    "keys",
    ["not-a-key", f"{KEY_B},{KEY_A[:-4]}", f"{KEY_B},short"],
    ids=["not a key", "the second cut short", "the second short"],
)
def test_production_refuses_to_start_with_a_malformed_key_and_does_not_print_it(keys):
    result = settings_loaded(SHOW_KEYS, {**PRODUCTION, "FERNET_KEYS": keys}, unset=WITHOUT_KEYS)

    assert result.returncode != 0
    position = len(keys.split(","))
    assert f"FERNET_KEYS: key {position} is not a Fernet key" in result.stderr
    for key in keys.split(","):
        assert key not in result.stderr and key not in result.stdout


def test_production_starts_with_two_keys_newest_first():
    result = settings_loaded(SHOW_KEYS, {**PRODUCTION, "FERNET_KEYS": f" {KEY_B} , {KEY_A} "}, unset=WITHOUT_KEYS)

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["2"]


# --- Secrets never shown ------------------------------------------------------------------------


def secret_forms(token: str, username: str = "x-access-token") -> list[str]:
    """The token, and the Basic credentials header value that carries it over http(s)."""
    return [token, base64.b64encode(f"{username}:{token}".encode()).decode()]


def assert_nowhere(text: str, where: str) -> None:
    for secret in secret_forms(TOKEN):
        assert secret not in text, f"the token appears in {where}"


@pytest.fixture
def failing_remote(request, receiver):
    """A repository URL whose first request fails with an error that names the URL: https with
    nothing listening, or a server that answers git's requests with 501."""
    if request.param == "https, nothing listening":
        return f"https://127.0.0.1:{free_port()}/team/site.git"
    return receiver.url.replace("/hook", "/team/site.git")


@pytest.mark.django_db
@pytest.mark.parametrize("failing_remote", ["https, nothing listening", "http, answers 501"], indirect=True)
def test_a_failing_publication_never_shows_the_token(
    logs,  # noqa: F811 - the fixture
    settings,
    failing_remote,
    receiver,
    django_capture_on_commit_callbacks,
):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    settings.PUBLISH_RETRY_DELAYS = []  # the first failure is the last: post.failed and the e-mail
    account = AccountFactory()
    admin = AdminUserFactory(account=account, email="admin@example.com")
    browser = admin_session(admin)
    channel = ChannelFactory(account=account, platform="git")
    WebhookEndpointFactory(account=account, url=receiver.url)
    saved = browser.post(
        "/admin/publishing_git/gitdestination/add/",
        {
            "channel": channel.pk,
            "repository_url": failing_remote,
            "branch": "main",
            "path_template": "content/posts/{slug}.md",
            "media_path": "static/images/{year}/{name}",
            "media_url": "/images/{year}/{name}",
            "author_name": "Bot",
            "author_email": "bot@example.com",
            "token_username": "x-access-token",
            "token": TOKEN,
        },
    )
    assert saved.status_code == 302
    destination = GitDestination.objects.get(channel=channel)
    post = post_create(channel=channel, title="Will not make it", body="x")
    post_publish_now(post_id=post.pk)

    with django_capture_on_commit_callbacks(execute=True):
        channel_run(channel.pk)

    job = PublicationJob.objects.get(post_id=post.pk)
    assert job.state == "failed"
    assert "127.0.0.1" in job.last_error  # the error names where it went: the case this test is about
    assert_nowhere(job.last_error, "the job's last error")

    # The webhook: post.failed, as written and as delivered.
    event = Event.objects.get(kind="post.failed")
    assert json.loads(event.body)["data"]["publication"]["last_error"] == job.last_error
    for delivery in Delivery.objects.filter(event__kind="post.failed"):
        delivery_attempt(delivery_id=str(delivery.pk), manual=True)
    [received] = [r for r in receiver.requests if r.headers.get("X-Service-Event") == "post.failed"]
    assert_nowhere(received.body.decode(), "the post.failed webhook body")
    for body in Event.objects.values_list("body", flat=True):
        assert_nowhere(body, "an event body")

    # The e-mail to the account's admins.
    [message] = mail.outbox
    assert message.to == ["admin@example.com"]
    assert_nowhere(f"{message.subject}\n{message.body}", "the e-mail")

    # The API.
    api = ApiKeyFactory(user=admin)
    responses = [
        browser.get(path, HTTP_AUTHORIZATION=f"Bearer {api.raw}")
        for path in (
            f"/v1/posts/{post.pk}",
            f"/v1/channels/{channel.pk}/posts/{post.pk}",
            f"/v1/channels/{channel.pk}/posts",
            f"/v1/channels/{channel.pk}",
        )
    ]
    assert responses[0].json()["data"]["publication"]["last_error"] == job.last_error

    # The Settings area, Test connection included.
    responses += [
        browser.post(f"/admin/publishing_git/gitdestination/{destination.pk}/test-connection/", follow=True),
        browser.get("/admin/publishing_git/gitdestination/"),
        browser.get(f"/admin/publishing_git/gitdestination/{destination.pk}/history/"),
        browser.get("/admin/publishing/publicationjob/"),
        browser.get(f"/admin/publishing/publicationjob/{job.pk}/change/"),
        browser.get(f"/admin/posts/post/{post.pk}/change/"),
    ]
    for response in responses:
        assert response.status_code == 200, response.request["PATH_INFO"]
        assert_nowhere(as_text(response), f"a response ({response.request['PATH_INFO']})")

    # The logs of all of it.
    written = logs()
    assert f"publication job={job.pk}" in written
    assert_nowhere(written, "the logs")
    assert destination.token_encrypted not in written
