"""The data migration that introduced the users scopes: keys that could do everything keep doing
everything, narrower keys stay narrow."""

import importlib

import pytest
from django.apps import apps

from tests.factories import ApiKeyFactory

pytestmark = pytest.mark.django_db

migration = importlib.import_module("apps.accounts.migrations.0005_users_scopes")
EARLIER = ["read:channels", "read:posts", "read:media", "write:posts", "write:sso"]


def test_a_key_with_every_earlier_scope_gets_the_users_scopes_and_a_narrower_key_does_not():
    everything = ApiKeyFactory(scopes=EARLIER)
    shuffled = ApiKeyFactory(scopes=list(reversed(EARLIER)))
    narrow = ApiKeyFactory(scopes=["read:channels", "read:posts"])
    nothing = ApiKeyFactory(scopes=[])

    migration.grant_users_scopes(apps, None)

    for key in (everything, shuffled, narrow, nothing):
        key.refresh_from_db()
    assert everything.scopes == [*EARLIER, "read:users", "write:users"]
    assert set(shuffled.scopes) == {*EARLIER, "read:users", "write:users"}
    assert narrow.scopes == ["read:channels", "read:posts"]
    assert nothing.scopes == []


def test_running_the_migration_twice_adds_nothing_more_and_its_reverse_takes_the_scopes_back():
    key = ApiKeyFactory(scopes=EARLIER)
    migration.grant_users_scopes(apps, None)
    migration.grant_users_scopes(apps, None)
    key.refresh_from_db()
    assert key.scopes == [*EARLIER, "read:users", "write:users"]

    migration.revoke_users_scopes(apps, None)
    key.refresh_from_db()
    assert key.scopes == EARLIER
