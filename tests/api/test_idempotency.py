"""Idempotency-Key on the API's writes: a retried request gets the first one's answer and does nothing
twice (apps/api/idempotency.py, apps/users/idempotency.py)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.accounts.models import Scope
from apps.users import api as users_api
from apps.users import idempotency as records
from apps.users.idempotency import RequestScope, records_sweep
from apps.users.models import IdempotencyRecord, Role, User
from apps.users.tasks import sweep_idempotency_records
from tests.factories import ApiKeyFactory, NewsletterChannelFactory, SubscriberFactory, UserFactory

pytestmark = pytest.mark.django_db

NEW_USER = {"email": "new@example.com", "name": "New", "send_invitation": False}


@pytest.fixture
def admin(admin_key, client_for):
    return client_for(admin_key)


def create_user(client, key: str | None = "retry-1", body=None, **extra):
    headers = {} if key is None else {"HTTP_IDEMPOTENCY_KEY": key}
    return client.post("/v1/users", NEW_USER if body is None else body, format="json", **headers, **extra)


def error_code(response) -> str:
    return response.json()["error"]["code"]


# --- replays ---------------------------------------------------------------------------------------


def test_the_same_request_again_gets_the_same_answer_and_creates_nothing_twice(admin, emitted):
    first = create_user(admin)
    again = create_user(admin)

    assert first.status_code == again.status_code == 201
    assert again.content == first.content
    assert again["Content-Type"] == first["Content-Type"]
    assert again["Idempotent-Replayed"] == "true"
    assert not first.has_header("Idempotent-Replayed")
    assert User.objects.filter(email=NEW_USER["email"]).count() == 1
    assert len(emitted("user.created")) == 1


def test_a_replay_repeats_the_location_and_etag_the_answer_had(admin, monkeypatch):
    original = users_api.UsersView.post.__wrapped__

    def post_with_headers(view, request):
        response = original(view, request)
        response["Location"] = f"/v1/users/{response.data['id']}"
        response["ETag"] = '"v1"'
        return response

    monkeypatch.setattr(users_api.UsersView, "post", users_api.idempotent(post_with_headers))
    first = create_user(admin)
    again = create_user(admin)

    assert (again["Location"], again["ETag"]) == (first["Location"], first["ETag"]) != (None, None)
    assert again["Idempotent-Replayed"] == "true"


def test_a_replayed_204_has_no_body(admin, admin_key):
    member = UserFactory(account=admin_key.account)
    first = admin.delete(f"/v1/users/{member.pk}", HTTP_IDEMPOTENCY_KEY="gone")
    again = admin.delete(f"/v1/users/{member.pk}", HTTP_IDEMPOTENCY_KEY="gone")

    assert first.status_code == again.status_code == 204
    assert again.content == b""
    assert again["Idempotent-Replayed"] == "true"
    assert not again.has_header("Content-Type")


def test_the_body_is_compared_as_parsed_json(admin):
    first = admin.post(
        "/v1/users",
        data=b'{"email": "new@example.com", "name": "New"}',
        content_type="application/json",
        HTTP_IDEMPOTENCY_KEY="k",
    )
    again = admin.post(
        "/v1/users",
        data=b'{ "name":"New",\n  "email":"new@example.com" }',
        content_type="application/json",
        HTTP_IDEMPOTENCY_KEY="k",
    )

    assert first.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert again.content == first.content


def test_a_different_body_with_the_same_key_is_refused_and_changes_nothing(admin):
    create_user(admin)
    other = create_user(admin, body={**NEW_USER, "email": "other@example.com"})

    assert other.status_code == 422
    assert error_code(other) == "idempotency_key_reused"
    assert "one request" in other.json()["error"]["message"]
    assert not User.objects.filter(email="other@example.com").exists()


def test_no_body_and_an_empty_object_are_different_requests(admin, admin_key):
    member = UserFactory(account=admin_key.account)
    path = f"/v1/users/{member.pk}"
    assert admin.put(path, HTTP_IDEMPOTENCY_KEY="k").status_code == 200
    with_empty_object = admin.put(path, {}, format="json", HTTP_IDEMPOTENCY_KEY="k")

    assert with_empty_object.status_code == 422
    assert error_code(with_empty_object) == "idempotency_key_reused"


def test_the_refusals_of_the_requests_own_checks_are_kept_and_replayed(admin, admin_key):
    taken = {**NEW_USER, "email": admin_key.user.email}
    first = create_user(admin, body=taken)
    # Even once the e-mail is free the retry gets the first answer: the key names that request.
    User.objects.filter(pk=admin_key.user_id).update(email="renamed@example.com")
    again = create_user(admin, body=taken)

    assert first.status_code == again.status_code == 409
    assert again.content == first.content
    assert again["Idempotent-Replayed"] == "true"


def test_a_validation_error_of_the_body_is_kept(admin):
    first = create_user(admin, body={"email": "not an address", "name": "X"})
    again = create_user(admin, body={"email": "not an address", "name": "X"})

    assert first.status_code == again.status_code == 400
    assert again["Idempotent-Replayed"] == "true"


def test_a_body_that_is_not_json_is_refused_before_the_key_is_used(admin):
    response = admin.post("/v1/users", data=b"{", content_type="application/json", HTTP_IDEMPOTENCY_KEY="k")

    assert response.status_code == 400
    assert IdempotencyRecord.objects.count() == 0


def test_without_the_header_every_request_runs(admin):
    assert create_user(admin, key=None).status_code == 201
    assert create_user(admin, key=None).status_code == 409
    assert IdempotencyRecord.objects.count() == 0


def test_a_request_that_loses_the_race_to_store_rolls_back_and_gets_the_winners_answer(admin, admin_key, monkeypatch):
    """Where the lock does not see the other request (SQLite has no advisory locks), the unique record
    decides: the loser's effects are rolled back and it answers as if it had found the record."""
    member = UserFactory(account=admin_key.account)
    path = f"/v1/users/{member.pk}"
    first = admin.put(path, {"name": "First"}, format="json", HTTP_IDEMPOTENCY_KEY="race")
    User.objects.filter(pk=member.pk).update(name="Changed since")
    find = records.record_find
    looks = []

    def unseen_the_first_time(scope, **kwargs):
        looks.append(scope)
        return None if len(looks) == 1 else find(scope, **kwargs)

    monkeypatch.setattr(records, "record_find", unseen_the_first_time)
    again = admin.put(path, {"name": "First"}, format="json", HTTP_IDEMPOTENCY_KEY="race")

    assert len(looks) == 2
    assert again.status_code == 200
    assert again["Idempotent-Replayed"] == "true"
    assert again.content == first.content
    member.refresh_from_db()
    assert member.name == "Changed since"
    assert IdempotencyRecord.objects.count() == 1


# --- what is never kept -----------------------------------------------------------------------------


def test_a_401_is_not_kept(api_client, admin_key, client_for):
    api_client.credentials(HTTP_AUTHORIZATION="Bearer cps_unknown0_nothing")
    assert create_user(api_client).status_code == 401

    assert create_user(client_for(admin_key)).status_code == 201
    assert IdempotencyRecord.objects.count() == 1


def test_a_403_for_the_scope_is_not_kept_and_the_request_runs_once_the_key_may(admin_key, client_for):
    admin_key.scopes = [scope for scope in admin_key.scopes if scope != Scope.WRITE_USERS]
    admin_key.save()
    refused = create_user(client_for(admin_key))
    assert refused.status_code == 403
    assert IdempotencyRecord.objects.count() == 0

    admin_key.scopes = [*admin_key.scopes, Scope.WRITE_USERS]
    admin_key.save()
    assert create_user(client_for(admin_key)).status_code == 201


def test_a_403_of_the_handler_is_not_kept(client_for):
    editor_key = ApiKeyFactory(user=UserFactory(role=Role.EDITOR))
    other = UserFactory(account=editor_key.account, role=Role.VIEWER)
    client = client_for(editor_key)

    for _ in range(2):
        response = client.post("/v1/sso_tokens", {"user_id": str(other.pk)}, format="json", HTTP_IDEMPOTENCY_KEY="k")
        assert response.status_code == 403
        assert error_code(response) == "admin_required"
        assert not response.has_header("Idempotent-Replayed")
    assert IdempotencyRecord.objects.count() == 0


def test_a_429_is_not_kept(admin, admin_key, settings):
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, admin_key.account.plan: 1}
    assert admin.get("/v1/me").status_code == 200

    assert create_user(admin).status_code == 429
    assert IdempotencyRecord.objects.count() == 0


def test_a_5xx_keeps_nothing_and_rolls_the_handlers_effects_back(admin, monkeypatch, emitted):
    create = users_api.user_create

    def create_then_fail(**kwargs):
        create(**kwargs)
        raise RuntimeError("the handler failed after its change")

    monkeypatch.setattr(users_api, "user_create", create_then_fail)
    failed = create_user(admin)

    assert failed.status_code == 500
    assert not User.objects.filter(email=NEW_USER["email"]).exists()
    assert emitted("user.created") == []
    assert IdempotencyRecord.objects.count() == 0

    monkeypatch.setattr(users_api, "user_create", create)
    assert create_user(admin).status_code == 201


@pytest.mark.django_db(transaction=True)
def test_a_write_that_deletes_the_key_that_sent_it_is_done(admin, admin_key):
    """Committed for real: the database checks foreign keys at the commit."""
    UserFactory(account=admin_key.account, role=Role.ADMIN)
    response = admin.delete(f"/v1/users/{admin_key.user_id}", HTTP_IDEMPOTENCY_KEY="leaving")

    assert response.status_code == 204
    assert not User.objects.filter(pk=admin_key.user_id).exists()


# --- where a key applies ----------------------------------------------------------------------------


def test_keys_of_different_api_keys_never_meet(admin_key, client_for):
    other_admin = ApiKeyFactory(user=UserFactory(account=admin_key.account, role=Role.ADMIN))
    first = create_user(client_for(admin_key))
    second = create_user(client_for(other_admin), body={**NEW_USER, "email": "second@example.com"})

    assert first.status_code == second.status_code == 201
    assert not second.has_header("Idempotent-Replayed")
    assert IdempotencyRecord.objects.count() == 2


def test_the_same_key_on_another_path_or_method_is_another_request(admin, admin_key):
    member = UserFactory(account=admin_key.account)
    created = create_user(admin, key="shared")
    updated = admin.put(f"/v1/users/{member.pk}", {"name": "Renamed"}, format="json", HTTP_IDEMPOTENCY_KEY="shared")
    profile = admin.put("/v1/users/profile", {"name": "Me"}, format="json", HTTP_IDEMPOTENCY_KEY="shared")
    deleted = admin.delete(f"/v1/users/{member.pk}", HTTP_IDEMPOTENCY_KEY="shared")

    assert [r.status_code for r in (created, updated, profile, deleted)] == [201, 200, 200, 204]
    assert not any(r.has_header("Idempotent-Replayed") for r in (updated, profile, deleted))
    assert IdempotencyRecord.objects.count() == 4


def test_the_newsletter_and_sso_writes_are_idempotent_too(admin, admin_key):
    newsletter = NewsletterChannelFactory(account=admin_key.account)
    path = f"/v1/channels/{newsletter.pk}/subscribers"
    body = {"email": "reader@example.com", "confirmed": True}
    added = [admin.post(path, body, format="json", HTTP_IDEMPOTENCY_KEY="add") for _ in range(2)]
    assert [r.status_code for r in added] == [201, 201]
    assert added[1].content == added[0].content

    subscriber = SubscriberFactory(channel=newsletter)
    erased = [admin.delete(f"{path}/{subscriber.pk}", HTTP_IDEMPOTENCY_KEY="erase") for _ in range(2)]
    assert [r.status_code for r in erased] == [204, 204]
    assert erased[1]["Idempotent-Replayed"] == "true"

    member = UserFactory(account=admin_key.account)
    tokens = [
        admin.post("/v1/sso_tokens", {"user_id": str(member.pk)}, format="json", HTTP_IDEMPOTENCY_KEY="sso")
        for _ in range(2)
    ]
    assert [r.status_code for r in tokens] == [201, 201]
    assert tokens[1].json()["data"]["token"] == tokens[0].json()["data"]["token"]
    assert member.sso_tokens.count() == 1


# --- the key itself ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "rule"),
    [
        ("", "blank"),
        ("k" * 256, "max_length"),
        ("caf\u00e9", "invalid"),
        ("tab\there", "invalid"),
        (" x", "invalid"),
        ("x\n", "invalid"),
    ],
)
def test_a_key_that_is_empty_too_long_or_not_printable_ascii_is_a_400(admin, key, rule):
    response = create_user(admin, key=key)

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert (error["details"]["field"], error["details"]["rule"]) == ("Idempotency-Key", rule)
    assert not User.objects.filter(email=NEW_USER["email"]).exists()


def test_a_key_of_255_printable_characters_is_taken(admin):
    key = "a b!~" + "z" * 250
    assert create_user(admin, key=key).status_code == 201
    assert create_user(admin, key=key)["Idempotent-Replayed"] == "true"


# --- expiry ---------------------------------------------------------------------------------------


def test_an_expired_record_counts_as_none_and_the_request_runs_again(admin, admin_key, settings):
    member = UserFactory(account=admin_key.account)
    path = f"/v1/users/{member.pk}"
    admin.put(path, {"name": "First"}, format="json", HTTP_IDEMPOTENCY_KEY="k")
    User.objects.filter(pk=member.pk).update(name="Changed meanwhile")
    IdempotencyRecord.objects.update(expires_at=timezone.now() - timedelta(seconds=1))

    again = admin.put(path, {"name": "First"}, format="json", HTTP_IDEMPOTENCY_KEY="k")

    assert again.status_code == 200
    assert not again.has_header("Idempotent-Replayed")
    member.refresh_from_db()
    assert member.name == "First"
    assert IdempotencyRecord.objects.count() == 1


def test_a_record_is_kept_for_the_ttl(admin, settings):
    settings.IDEMPOTENCY_KEY_TTL = timedelta(minutes=5)
    before = timezone.now()
    create_user(admin)

    record = IdempotencyRecord.objects.get()
    assert before + timedelta(minutes=5) <= record.expires_at <= timezone.now() + timedelta(minutes=5)


def test_the_sweep_deletes_expired_records_in_batches_and_keeps_the_others(admin_key):
    now = timezone.now()
    for n in range(5):
        IdempotencyRecord.objects.create(
            api_key=admin_key,
            method="POST",
            path="/v1/users",
            key=f"old-{n}",
            scope_digest=RequestScope(admin_key.pk, "POST", "/v1/users", f"old-{n}").digest,
            fingerprint="f",
            status=201,
            body=b"{}",
            created_at=now - timedelta(days=2),
            expires_at=now - timedelta(days=1),
        )
    IdempotencyRecord.objects.create(
        api_key=admin_key,
        method="POST",
        path="/v1/users",
        key="fresh",
        scope_digest="fresh",
        fingerprint="f",
        status=201,
        body=b"{}",
        created_at=now,
        expires_at=now + timedelta(hours=1),
    )

    assert records_sweep(batch=2) == 5
    assert list(IdempotencyRecord.objects.values_list("key", flat=True)) == ["fresh"]
    assert sweep_idempotency_records() == 0


def test_the_sweep_runs_on_beats_schedule(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["users.sweep_idempotency_records"]
    assert entry["task"] == sweep_idempotency_records.name


def test_a_bad_ttl_stops_the_start_up():
    from tests.conftest import settings_loaded

    loaded = settings_loaded("import config.settings", {"IDEMPOTENCY_KEY_TTL": "soon"})
    assert loaded.returncode != 0
    assert "IDEMPOTENCY_KEY_TTL must be a positive duration" in loaded.stderr
