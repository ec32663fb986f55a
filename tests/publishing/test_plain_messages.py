"""What the git and LinkedIn destinations say to people (errors, help texts, the Settings area's
messages, each destination's words for the post's page) is plain text: no Markdown syntax such as
backticks, and no paths of this repository such as docs/publishing.md, which no reader can open."""

import re

import pytest
from dulwich.client import HTTPUnauthorized

from apps.core.destinations import PublishError, kind_for
from apps.core.errors import InvalidInput
from apps.publishing.git.admin import GitDestinationForm
from apps.publishing.git.failures import describe_failure
from apps.publishing.git.remote import Credentials, parse_remote
from apps.publishing.git.services import GitSettings, git_destination_save
from apps.publishing.git.ssh import ssh_client
from tests.conftest import admin_session
from tests.factories import AdminUserFactory, ChannelFactory
from tests.publishing.test_settings_area import messages_of

pytestmark = pytest.mark.django_db

REPOSITORY_PATH = re.compile(r"\b(docs|apps|templates|tests)/")
SSH = "ssh://git@git.example.com:2222/team/site.git"


def assert_plain(text: str) -> None:
    assert "`" not in text, text
    assert not REPOSITORY_PATH.search(text), text


@pytest.mark.parametrize("platform", ["git", "linkedin", "newsletter"])
def test_each_destinations_words_are_plain(platform):
    kind = kind_for(platform)
    channel = ChannelFactory(platform=platform)

    for text in (kind.missing, kind.publishes, kind.reference, kind.unready(channel.pk)):
        assert_plain(text)


def test_the_git_forms_help_texts_are_plain():
    for field in GitDestinationForm().fields.values():
        assert_plain(str(field.help_text))


def test_an_ssh_repository_without_the_hosts_keys_is_told_the_command_in_plain_words(private_targets):
    channel = ChannelFactory(platform="git")

    with pytest.raises(InvalidInput) as refused:
        git_destination_save(channel=channel, settings=GitSettings(repository_url=SSH), ssh_key="PRIVATE KEY x")

    message = refused.value.details["errors"][0]["message"]
    assert "paste the output of ssh-keyscan -p 2222 git.example.com." in message
    assert_plain(message)


def test_an_ssh_job_without_the_hosts_keys_fails_in_plain_words():
    with (
        pytest.raises(PublishError) as refused,
        ssh_client(parse_remote(SSH), Credentials(ssh_key="-----BEGIN OPENSSH PRIVATE KEY-----\nx\n"), timeout=5),
    ):
        pass

    assert "ssh-keyscan -p 2222 git.example.com" in refused.value.message
    assert_plain(refused.value.message)


@pytest.mark.parametrize(
    "failure",
    [
        HTTPUnauthorized("www-authenticate", "https://git.example.com/team/site.git"),
        OSError("No ED25519 host key is known for [git.example.com]:2222 and ... Host key verification failed."),
        OSError("REMOTE HOST IDENTIFICATION HAS CHANGED ... Host key verification failed."),
    ],
)
def test_what_went_wrong_reaching_a_repository_is_said_in_plain_words(failure):
    described = describe_failure(failure, parse_remote(SSH), "main")

    assert described.permanent
    assert_plain(described.message)


def test_connecting_linkedin_on_a_server_without_a_linkedin_app_says_so_in_plain_words(settings):
    settings.LINKEDIN_CLIENT_ID = settings.LINKEDIN_CLIENT_SECRET = ""
    channel = ChannelFactory(platform="linkedin")
    client = admin_session(AdminUserFactory(account=channel.account))

    response = client.get(f"/admin/publishing_linkedin/linkedinconnection/connect/{channel.pk}/", follow=True)

    [message] = messages_of(response)
    assert message.startswith("LinkedIn is not set up on this server")
    assert_plain(message)
