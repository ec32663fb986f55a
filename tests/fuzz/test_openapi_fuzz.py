"""Schemathesis fuzzes every operation of the live server from its own `/v1/openapi.json`.

With a valid key (every scope, an admin) each response must be documented for its operation (status
code, content type, headers, body shape: response conformance, errors' `details` included), never a
5xx; schema-valid input must not be refused with a 400 and schema-violating input must not be accepted
(so the schema states the server's real input rules). The subscribers operations are sent to a real
newsletter of the key's account, whose reader has the address of the POST's example (a 409). With
invalid keys every operation answers a documented 401. The stateful phase then chains operations
through the links schemathesis infers from the schema (a created user's id into GET, PUT and DELETE
/v1/users/{user_id}, a listed channel's and post's ids into the post operations, a created or listed
story's id into its operations), so that requests reach real objects, and holds every step to the same
checks.

The run is deterministic (fixed seed, no example database, every stateful scenario starting from the same
rows) and bounded: about 75 seconds, 25 of them the stateful phase.
"""

from datetime import timedelta
from urllib.parse import unquote, urlsplit

import pytest
import schemathesis
from django.apps import apps
from django.db import transaction
from django.urls import Resolver404, resolve
from django.utils import timezone
from hypothesis import HealthCheck, Phase
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from apps.api.views import UnknownPathView
from apps.posts.writing import Writer
from apps.publishing.newsletter.models import Subscriber, SuppressionReason
from apps.publishing.newsletter.services import suppress
from apps.stories.services import ChannelChoice, story_create
from apps.users.api import TIMEZONE_FORMAT
from apps.users.models import IdempotencyRecord, Role, Status, User, timezone_names
from tests.factories import (
    AccountFactory,
    AdminUserFactory,
    ApiKeyFactory,
    ApiPublicationFactory,
    ChannelFactory,
    MediaFactory,
    NewsletterChannelFactory,
    PostFactory,
    SubscriberFactory,
    TagFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db(transaction=True)

SEED = 20261122
# The stateful phase: this many scenarios (chains of operations), each at most this many steps long.
STATEFUL_SCENARIOS = 120
STATEFUL_STEPS = 10
# Operations the stateful phase must reach through a link, with the status showing it found the object.
CHAINED = {
    ("GET /v1/users/{user_id}", 200),
    ("PUT /v1/users/{user_id}", 200),
    ("DELETE /v1/users/{user_id}", 204),
    ("GET /v1/channels/{id}", 200),
    ("GET /v1/stories/{id}", 200),
}
# Links the machine must have, whether or not a run's draws take them: (from, to) as its rules name
# them. The channels list's link to a channel's posts is one of about 80 links, which 120 scenarios
# do not always take (a new platform in an enum moves the draws), so it is looked for in the machine.
INFERRED = {("GET_v1_channels___200", "GET_v1_channels_channel_id_posts")}
# What a schema-valid request may get in the stateful phase: schemathesis' default, 412 and 422 (below).
STATEFUL_ACCEPTED_STATUSES = ["2xx", "3xx", "401", "403", "404", "409", "412", "422", "429", "5xx"]
# Checks turned off for one operation, each with its reason.
CHECKS_OFF = {
    # `external_url` is an http(s) URL as Django's URLValidator reads it, which refuses some URIs that
    # JSON Schema's `uri` format allows (a host name over 253 characters, for example) and no `pattern`
    # can state that rule. Schema-violating URLs are still checked to be refused (negative_data_rejection).
    ("PATCH", "/v1/channels/{channel_id}/posts/{id}/publish"): ["positive_data_acceptance"],
    # `cursor` is an opaque token that only the server issues (signed, naming its list): every string is
    # schema-valid, and a made-up one is refused with the documented 400, as is `cursor` with `page`, which
    # OpenAPI 3.0 cannot state for query parameters. The fuzzer still sends them and checks every response
    # against the schema; tests/posts/test_post_cursor.py covers the cursor's rules, test_post_filters.py and
    # tests/api/test_list_pagination.py the other parameters.
    ("GET", "/v1/channels/{channel_id}/posts"): ["positive_data_acceptance"],
    # A story's body names rows of the account (its channels, its media) and rules between fields (a
    # `scheduled` story needs its `scheduled_at`, and only it has one), which no schema states: a made-up
    # channel id, a schedule without its time, are refused with the documented 400 (`channels[0].id`
    # `not_found`, `scheduled_at` `required`), a channel that cannot publish with the documented 422.
    # Every response is still checked against the schema, and schema-violating bodies are still checked to
    # be refused; tests/stories/test_stories_api.py covers each of those rules.
    ("POST", "/v1/stories"): ["positive_data_acceptance"],
    ("PATCH", "/v1/stories/{id}"): ["positive_data_acceptance"],
    # An upload's `file` is binary: what it must hold (an image Pillow decodes, without markup, within
    # MEDIA_MAX_PIXELS) is beyond what a schema states, so the fuzzer's bytes are refused with the
    # documented 400. Every response is still checked against the schema; tests/media/test_upload.py
    # covers what is taken and what is refused.
    ("POST", "/v1/media"): ["positive_data_acceptance"],
}


# `timezone` is a string of this format (a name of the tz database), not an enum of ~600 names: the fuzzer
# draws names the server accepts, so that a schema-valid profile is still one the server must take.
schemathesis.openapi.format(TIMEZONE_FORMAT, st.sampled_from(timezone_names()))


# The address of the subscribers POST's first OpenAPI example ("Opted in on another site"): the world's
# newsletter has a reader with it, so the examples phase gets the 409 `conflict` and its `details.reason`.
EXAMPLE_READER = "ada@example.com"


def fuzz_config(
    *, max_examples: int, coverage: bool, stateful: bool = False, newsletter_id: int | None = None
) -> schemathesis.Config:
    """`newsletter_id`: the channel every subscribers operation is sent to, so that the fuzzer reaches a real
    list (its readers, 201, 409, 204) rather than a 404 for a channel id it made up."""
    pinned = (
        [{"include-path-regex": "/subscribers", "parameters": {"path.channel_id": newsletter_id}}]
        if newsletter_id is not None
        else []
    )
    operations = pinned + [
        {"include-method": method, "include-path": path, "checks": {name: {"enabled": False} for name in names}}
        for (method, path), names in CHECKS_OFF.items()
    ]
    return schemathesis.Config.from_dict(
        {
            "seed": SEED,
            # U+0000 is refused in every string and key of a body (the JSON input policy, stated in each
            # body's description and `x-json-input-rules`, which JSON Schema cannot express for free-form
            # objects such as `metadata`); test_bad_json_values.py sends it to every operation instead.
            "generation": {"max-examples": max_examples, "deterministic": True, "database": "none", "allow-x00": False},
            "phases": {
                "coverage": {"enabled": coverage},
                "stateful": {
                    "enabled": stateful,
                    "max-steps": STATEFUL_STEPS,
                    # Chains reach real objects, whose state can refuse a schema-valid change with the
                    # documented 422 (a user set back to `invited`, the last admin demoted, a post published
                    # twice), and a schema-valid precondition can be false of them (`If-Unmodified-Since` a date
                    # before the post's last change) with the documented 412 (RFC 9110): the rule checked
                    # stays "schema-valid input is never refused with a 400".
                    "checks": {"positive_data_acceptance": {"expected-statuses": STATEFUL_ACCEPTED_STATUSES}},
                },
            },
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
    PostFactory(channel=blog, teaser="", meta_title=None, publication_status="published", published_at=timezone.now())
    ChannelFactory(account=AccountFactory())  # another account's, never to be seen
    newsletter = NewsletterChannelFactory(account=account, team=None)
    SubscriberFactory(channel=newsletter, email=EXAMPLE_READER)
    # A story on the blog and the api channel, for the stories' operations to find (and link to).
    story_create(
        account_id=account.pk,
        writer=Writer(may_publish=True),
        title="A story",
        channels=[ChannelChoice(blog.pk), ChannelChoice(api.pk, overrides={"title": "Its own title"})],
    )
    return {"admin": admin, "key": ApiKeyFactory(user=admin), "newsletter": newsletter}


def keep_usable(world) -> None:
    """The fuzzer may delete, suspend or demote any user whose id it guesses, the key's owner too: put them
    back, so that one lucky guess does not turn the rest of the run into 401s."""
    admin, key = world["admin"], world["key"]
    if not User.objects.filter(pk=admin.pk).exists():
        admin.save(force_insert=True)
        key.save(force_insert=True)  # the same prefix and hash: the same raw key works again
    User.objects.filter(pk=admin.pk).update(status=Status.ACTIVE, role=Role.ADMIN)
    # The same for the reader whose address the examples phase adds again (a DELETE may have erased them).
    Subscriber.objects.get_or_create(channel=world["newsletter"], email=EXAMPLE_READER)
    # Each case is a first request: the fuzzer makes `Idempotency-Key`s up, and the same one sent again with
    # another body gets the documented 422 `idempotency_key_reused` (the client's mistake, not a schema-valid
    # request refused). tests/api/test_idempotency.py covers replays.
    IdempotencyRecord.objects.all().delete()


@pytest.fixture
def live_schema(live_server, world):
    return schemathesis.openapi.from_url(
        f"{live_server.url}/v1/openapi.json",
        config=fuzz_config(max_examples=12, coverage=True, newsletter_id=world["newsletter"].pk),
    )


@pytest.fixture
def live_schema_no_coverage(live_server, world):
    return schemathesis.openapi.from_url(
        f"{live_server.url}/v1/openapi.json",
        config=fuzz_config(max_examples=4, coverage=False, newsletter_id=world["newsletter"].pk),
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


def test_every_error_of_adding_a_subscriber_matches_the_schema_of_its_status(live_server, world):
    """The errors the fuzzer may or may not draw, each sent once: the response checks of the run above
    (the 409's `details.reason` included) hold for every one."""
    newsletter = world["newsletter"]
    suppress(account_id=newsletter.account_id, email="bounced@example.com", reason=SuppressionReason.BOUNCE)
    viewer = ApiKeyFactory(user=UserFactory(account=newsletter.account, role=Role.VIEWER))
    schema = schemathesis.openapi.from_url(
        f"{live_server.url}/v1/openapi.json",
        config=fuzz_config(max_examples=1, coverage=False, newsletter_id=newsletter.pk),
    )
    operation = schema["/v1/channels/{channel_id}/subscribers"]["POST"]
    sent = [
        (world["key"], {"email": EXAMPLE_READER}, 409, "conflict"),
        (world["key"], {"email": "bounced@example.com"}, 409, "conflict"),
        (world["key"], {"email": "not an address"}, 400, "VALIDATION_ERROR"),
        # Valid as sent, not once lower-cased ("İ" becomes "i" and a combining dot): refused by the service.
        (world["key"], {"email": "\u0130@example.com"}, 400, "VALIDATION_ERROR"),
        (viewer, {"email": "new@example.com", "confirmed": True}, 403, "admin_required"),
    ]

    for key, body, status, code in sent:
        case = operation.Case(path_parameters={"channel_id": newsletter.pk}, body=body, media_type="application/json")
        response = case.call_and_validate(headers={"Authorization": f"Bearer {key.raw}"})
        assert (response.status_code, response.json()["error"]["code"]) == (status, code), body


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


def snapshot() -> dict:
    """Every row of the project's tables (the apps' models and their many-to-many tables), by primary key."""
    models = [model for model in apps.get_models(include_auto_created=True) if model.__module__.startswith("apps.")]
    return {model: {row[model._meta.pk.attname]: row for row in model._base_manager.values()} for model in models}


def restore(saved: dict) -> None:
    """Put the tables back as `snapshot` saw them: rows added since are deleted, changed rows written back and
    deleted rows inserted again with their ids (as `loaddata` does). Foreign keys are checked at the commit."""
    with transaction.atomic():
        for model, rows in saved.items():
            manager = model._base_manager
            pk = model._meta.pk.attname
            current = {row[pk]: row for row in manager.values()}
            if added := current.keys() - rows.keys():
                manager.filter(pk__in=added).delete()
            for key, row in rows.items():
                if key not in current:
                    model(**row).save_base(raw=True, force_insert=True)
                elif current[key] != row:
                    manager.filter(pk=key).update(**row)


@pytest.fixture
def live_state_machine(live_server, world):
    schema = schemathesis.openapi.from_url(
        f"{live_server.url}/v1/openapi.json",
        config=fuzz_config(
            max_examples=STATEFUL_SCENARIOS, coverage=False, stateful=True, newsletter_id=world["newsletter"].pk
        ),
    )
    # Links are inferred from the schema (schemathesis' dependency analysis): a created user's `id` to
    # GET/PUT/DELETE /v1/users/{user_id}, a listed channel's `id` to its posts, a listed post's `id` (and the
    # channel of the request) to the post, its publish and unpublish, a post's `id` to /v1/posts/{id}.
    return schema.as_state_machine()


def test_chains_of_operations_conform_to_the_schema_with_a_valid_key(live_state_machine, world):
    """Schemathesis' state machine chains operations through the links, so that requests reach real objects
    (a user just created, a post just listed): the same checks as above hold at every step. Each scenario
    starts from the same world, so that the run stays deterministic."""
    authorization = {"Authorization": f"Bearer {world['key'].raw}"}
    initial = snapshot()
    followed = set()  # (operation, status) of the steps that used a value from an earlier response

    class Workflow(live_state_machine):
        rule_order_seed = SEED  # which operations start scenarios, as the CLI orders them for its seed

        def get_call_kwargs(self, case):
            # Every case carries a generated Authorization header, which the valid key replaces, except the
            # negative cases generated to go without one. (Sending the key whatever the case would undo
            # those: schemathesis 4.32.5 leaves the header out itself only when the header is the one
            # part of the request made invalid, so a case invalid in its query and in its header got the
            # key back, a valid query and a 200, and failed negative_data_rejection.)
            return {"headers": authorization} if "Authorization" in (case.headers or {}) else {}

        def step(self, input):
            output = super().step(input)
            if input.transition is not None and input.is_applied:
                followed.add((output.case.operation.label, output.response.status_code))
            return output

        def after_call(self, response, case):
            super().after_call(response, case)
            keep_usable(world)

        def teardown(self):
            # Otherwise a scenario meets what earlier ones left (users created, a post published): responses,
            # and so the rules Hypothesis can draw, change, and it stops on "inconsistent data generation".
            restore(initial)
            super().teardown()

    settings = hypothesis_settings(
        live_state_machine.schema.config.get_hypothesis_settings(phase="stateful"),
        deadline=None,
        suppress_health_check=list(HealthCheck),
        # As schemathesis runs its state machines: a failing scenario is reported as found, not shrunk.
        phases=[Phase.generate],
    )
    Workflow.run(settings=settings)
    # The chains reach real objects: if the links were no longer inferred (a schema change), this says so.
    assert not CHAINED - followed, f"not reached through a link: {sorted(CHAINED - followed)}"
    # A rule of schemathesis' machine is named <source>_<status>_<link>__<target>: no public API lists
    # the links it inferred, and a renaming fails here, saying so, rather than passing unseen.
    rules = [name.rsplit("__", 1) for name in dir(live_state_machine) if "__" in name.strip("_")]
    missing = {
        (source, target)
        for source, target in INFERRED
        if not any(rule[0].startswith(source) and rule[-1] == target for rule in rules)
    }
    assert not missing, f"links no longer inferred: {sorted(missing)}"
