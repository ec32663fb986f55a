"""Schemathesis fuzzes every operation of the live server from its own `/v1/openapi.json`.

With a valid key (every scope, an admin) each response must be documented for its operation (status
code, content type, headers, body shape), never a 5xx; schema-valid input must not be refused with a
400 and schema-violating input must not be accepted (so the schema states the server's real input
rules). With invalid keys every operation answers a documented 401.

The run is deterministic (fixed seed, no example database) and bounded: about half a minute.
"""

from datetime import timedelta
from urllib.parse import unquote, urlsplit

import pytest
import schemathesis
from django.urls import Resolver404, resolve
from django.utils import timezone
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from apps.api.views import UnknownPathView
from apps.users.models import Role, Status, User
from tests.factories import (
    AccountFactory,
    AdminUserFactory,
    ApiKeyFactory,
    ApiPublicationFactory,
    ChannelFactory,
    MediaFactory,
    PostFactory,
    TagFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db(transaction=True)

SEED = 20261122
# Operations whose coverage phase is turned off, each with its reason.
NO_COVERAGE_PHASE = {
    # The coverage phase sends every value of every enum: for `timezone` that is each of the ~600 IANA zones
    # (1,900 requests, most of the fuzzer's time). The fuzzing phase still generates zones, valid and not.
    ("PUT", "/v1/users/profile"): "one request per IANA time zone",
}
# Checks turned off for one operation, each with its reason.
CHECKS_OFF = {
    # `external_url` is an http(s) URL as Django's URLValidator reads it, which refuses some URIs that
    # JSON Schema's `uri` format allows (a host name over 253 characters, for example) and no `pattern`
    # can state that rule. Schema-violating URLs are still checked to be refused (negative_data_rejection).
    ("PATCH", "/v1/channels/{channel_id}/posts/{id}/publish"): ["positive_data_acceptance"],
}


def fuzz_config(*, max_examples: int, coverage: bool) -> schemathesis.Config:
    operations = [
        {"include-method": method, "include-path": path, "phases": {"coverage": {"enabled": False}}}
        for (method, path) in NO_COVERAGE_PHASE
    ] + [
        {"include-method": method, "include-path": path, "checks": {name: {"enabled": False} for name in names}}
        for (method, path), names in CHECKS_OFF.items()
    ]
    return schemathesis.Config.from_dict(
        {
            "seed": SEED,
            "generation": {"max-examples": max_examples, "deterministic": True, "database": "none"},
            "phases": {"coverage": {"enabled": coverage}, "stateful": {"enabled": False}},
            "operations": operations,
        }
    )


HYPOTHESIS = hypothesis_settings(
    deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)


@pytest.fixture
def world(settings):
    """An account with content in every state, and a key with every scope of one of its two admins."""
    # Rate limits would turn the run into 429s: the account is unlimited, and so are the address's 401s.
    settings.RATE_LIMIT_AUTH_FAILURES = None
    account = AccountFactory(plan="enterprise")
    admin = AdminUserFactory(account=account)
    # A second admin, so that demoting or suspending the first is allowed, as it would be for a real client.
    AdminUserFactory(account=account)
    UserFactory(account=account, role=Role.VIEWER, status=Status.INVITED)
    api = ChannelFactory(account=account, platform="api")
    blog = ChannelFactory(account=account, team=None)
    pending = ApiPublicationFactory(post__channel=api).post
    pending.tags.set([TagFactory(account=account)])
    MediaFactory(post=pending)
    PostFactory(channel=blog, teaser=None, slug=None, publication_status="published", published_at=timezone.now())
    ChannelFactory(account=AccountFactory())  # another account's, never to be seen
    return {"admin": admin, "key": ApiKeyFactory(user=admin)}


def keep_usable(world) -> None:
    """The fuzzer may delete, suspend or demote any user whose id it guesses, the key's owner too: put them
    back, so that one lucky guess does not turn the rest of the run into 401s."""
    admin, key = world["admin"], world["key"]
    if not User.objects.filter(pk=admin.pk).exists():
        admin.save(force_insert=True)
        key.save(force_insert=True)  # the same prefix and hash: the same raw key works again
    User.objects.filter(pk=admin.pk).update(status=Status.ACTIVE, role=Role.ADMIN)


@pytest.fixture
def live_schema(live_server, world):
    return schemathesis.openapi.from_url(
        f"{live_server.url}/v1/openapi.json", config=fuzz_config(max_examples=12, coverage=True)
    )


@pytest.fixture
def live_schema_no_coverage(live_server, world):
    return schemathesis.openapi.from_url(
        f"{live_server.url}/v1/openapi.json", config=fuzz_config(max_examples=4, coverage=False)
    )


with_valid_key = schemathesis.pytest.from_fixture("live_schema")
with_invalid_keys = schemathesis.pytest.from_fixture("live_schema_no_coverage")


@with_valid_key.parametrize()
@HYPOTHESIS
def test_every_operation_conforms_to_the_schema_with_a_valid_key(case, world):
    try:
        case.call_and_validate(headers={"Authorization": f"Bearer {world['key'].raw}"})
    finally:
        keep_usable(world)


@pytest.fixture
def invalid_authorizations(world):
    account = world["admin"].account
    past = timezone.now() - timedelta(seconds=1)
    valid = world["key"].raw
    return {
        "missing": None,
        "not bearer": f"Basic {valid}",
        "malformed": "Bearer not-a-key",
        "unknown": "Bearer cps_00000000_" + "x" * 43,
        "wrong secret": f"Bearer {valid[:-4]}xxxx",
        "expired": f"Bearer {ApiKeyFactory(user=world['admin'], expires_at=past).raw}",
        "revoked": f"Bearer {ApiKeyFactory(user=world['admin'], revoked_at=past).raw}",
        "suspended owner": f"Bearer {ApiKeyFactory(user=UserFactory(account=account, status='suspended')).raw}",
    }


def reaches_an_endpoint(url: str) -> bool:
    """False for paths no endpoint has (`/v1/posts/null`): those answer 404 without looking at a key."""
    try:
        match = resolve(unquote(urlsplit(url).path))
    except Resolver404:
        return False
    return getattr(match.func, "cls", None) is not UnknownPathView


@with_invalid_keys.parametrize()
@HYPOTHESIS
def test_every_operation_answers_a_documented_401_to_invalid_keys(case, invalid_authorizations):
    for name, authorization in invalid_authorizations.items():
        # The generated case may carry an Authorization header of its own: this one replaces it.
        if case.headers:
            case.headers.pop("Authorization", None)
        response = case.call_and_validate(headers={"Authorization": authorization} if authorization else {})
        # Cases that test a missing key are sent without one, whatever is passed here.
        sent = response.request.headers.get("Authorization")
        if not reaches_an_endpoint(response.request.url):
            # No endpoint: 404, or 401 when a header was sent (a key that is sent is always checked).
            assert response.status_code == (401 if sent else 404), (name, response.status_code)
            continue
        # 406, 411, 413 and 415 are decided from the request's headers before the key is looked at.
        assert response.status_code in (401, 406, 411, 413, 415), (name, response.status_code)
        if response.status_code == 401:
            assert response.json()["error"]["code"] == "authentication_failed", name
