import json
from io import StringIO

import pytest
from cryptography.fernet import Fernet
from django.core.management import CommandError, call_command

from apps.core import crypto
from apps.publishing.git.models import GitDestination
from tests.factories import GitDestinationFactory

pytestmark = pytest.mark.django_db

OLD, NEW = Fernet.generate_key().decode(), Fernet.generate_key().decode()


def stored(destination) -> GitDestination:
    return GitDestination.objects.get(pk=destination.pk)


def test_rotating_moves_every_stored_credential_to_the_newest_key(settings):
    settings.FERNET_KEYS = [OLD]
    with_token = GitDestinationFactory(token="tok-one")
    with_key = GitDestinationFactory(token="")
    GitDestination.objects.filter(pk=with_key.pk).update(ssh_key_encrypted=crypto.encrypt("-----BEGIN KEY-----"))
    settings.FERNET_KEYS = [NEW, OLD]
    out = StringIO()
    call_command("rotate_credentials", "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert report["reencrypted"]["publishing_git.GitDestination.token_encrypted"] == 1
    assert report["reencrypted"]["publishing_git.GitDestination.ssh_key_encrypted"] == 1
    assert report["unreadable"] == []
    # The old key can go: everything opens with the new one alone.
    settings.FERNET_KEYS = [NEW]
    assert stored(with_token).token() == "tok-one"
    assert stored(with_key).ssh_key() == "-----BEGIN KEY-----"


def test_a_credential_no_key_opens_is_reported_and_left_as_it_was(settings):
    settings.FERNET_KEYS = [OLD]
    destination = GitDestinationFactory(token="tok-two")
    before = stored(destination).token_encrypted
    settings.FERNET_KEYS = [NEW]
    with pytest.raises(CommandError, match="No key of FERNET_KEYS opens these"):
        call_command("rotate_credentials", stdout=StringIO())
    assert stored(destination).token_encrypted == before
