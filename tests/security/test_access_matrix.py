"""Every /v1 operation, with every kind of key, on an object of the key's own account or of another one.

The expected answer follows the rules of the spec and the README, checked in this order:
1. no key, or an expired or revoked one: 401 `authentication_failed`;
2. a key without the operation's scope: 403 `insufficient_scope` (before anything is looked up);
3. an admin-only operation with a key whose owner is not an admin: 403 `admin_required`; an operation that
   needs a permission of the key's owner (`articles.write`...), which a viewer lacks: 403 `permission_denied`;
4. another account's object: 404 `not_found`, exactly as for an id that does not exist (never 403);
5. an operation that is admin-only for other users than the key's owner: 403 `admin_required`;
6. otherwise success.
"""

import io
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from apps.accounts.models import ALL_SCOPES, Scope
from apps.posts.writing import Writer
from apps.publishing.models import JobState, PublicationJob
from apps.stories.models import Story
from apps.stories.services import ChannelChoice, story_create
from apps.users.models import Role
from tests.factories import (
    AccountFactory,
    ApiKeyFactory,
    ApiPublicationFactory,
    ChannelFactory,
    GitDestinationFactory,
    MediumFactory,
    PostFactory,
    SubscriberFactory,
    UserFactory,
)
from tests.media import images

pytestmark = pytest.mark.django_db

MISSING = 10**9  # an id no object has


@dataclass(frozen=True)
class Operation:
    method: str
    path: str  # as in the OpenAPI schema
    scope: str | None = None
    admin: str = ""  # "always": admin-only; "others": admin-only unless the object is the key's owner
    target: str | None = None  # the kind of object the path or body names
    success: int = 200
    permission: str | None = None  # the permission of the key's owner it needs (viewers have none of these)

    def __str__(self) -> str:
        return f"{self.method} {self.path}"


OPERATIONS = [
    Operation("GET", "/v1/me"),
    Operation("GET", "/v1/channels", Scope.READ_CHANNELS),
    Operation("GET", "/v1/channels/{id}", Scope.READ_CHANNELS, target="channel"),
    Operation("GET", "/v1/channels/{channel_id}/posts", Scope.READ_POSTS, target="channel"),
    Operation("GET", "/v1/channels/{channel_id}/posts/{id}", Scope.READ_POSTS, target="post"),
    Operation("GET", "/v1/posts/{id}", Scope.READ_POSTS, target="post"),
    Operation(
        "POST",
        "/v1/channels/{channel_id}/posts",
        Scope.WRITE_POSTS,
        target="channel",
        success=201,
        permission="articles.write",
    ),
    Operation(
        "PATCH", "/v1/channels/{channel_id}/posts/{id}", Scope.WRITE_POSTS, target="post", permission="articles.write"
    ),
    Operation(
        "DELETE",
        "/v1/channels/{channel_id}/posts/{id}",
        Scope.WRITE_POSTS,
        target="post",
        success=204,
        permission="articles.delete",
    ),
    Operation("GET", "/v1/channels/{channel_id}/changes", Scope.READ_POSTS, target="channel"),
    Operation("PATCH", "/v1/channels/{channel_id}/posts/{id}/publish", Scope.WRITE_POSTS, target="pending"),
    Operation("PATCH", "/v1/channels/{channel_id}/posts/{id}/unpublish", Scope.WRITE_POSTS, target="published"),
    Operation("POST", "/v1/sso_tokens", Scope.WRITE_SSO, admin="others", target="user", success=201),
    Operation("GET", "/v1/users/profile"),
    Operation("PUT", "/v1/users/profile"),
    Operation("GET", "/v1/users", Scope.READ_USERS, admin="always"),
    Operation("POST", "/v1/users", Scope.WRITE_USERS, admin="always", success=201),
    Operation("GET", "/v1/users/{user_id}", Scope.READ_USERS, admin="others", target="user"),
    Operation("PUT", "/v1/users/{user_id}", Scope.WRITE_USERS, admin="always", target="user"),
    Operation("DELETE", "/v1/users/{user_id}", Scope.WRITE_USERS, admin="always", target="user", success=204),
    Operation("GET", "/v1/channels/{channel_id}/subscribers", Scope.READ_SUBSCRIBERS, target="newsletter"),
    Operation(
        "POST", "/v1/channels/{channel_id}/subscribers", Scope.WRITE_SUBSCRIBERS, target="newsletter", success=201
    ),
    Operation(
        "GET", "/v1/channels/{channel_id}/subscribers/{subscriber_id}", Scope.READ_SUBSCRIBERS, target="subscriber"
    ),
    Operation(
        "DELETE",
        "/v1/channels/{channel_id}/subscribers/{subscriber_id}",
        Scope.WRITE_SUBSCRIBERS,
        target="subscriber",
        success=204,
    ),
]

OPERATIONS += [
    Operation("GET", "/v1/media", Scope.READ_MEDIA),
    Operation("POST", "/v1/media", Scope.WRITE_MEDIA, success=201, permission="articles.write"),
    Operation("GET", "/v1/media/{id}", Scope.READ_MEDIA, target="medium"),
    Operation("PATCH", "/v1/media/{id}", Scope.WRITE_MEDIA, target="medium", permission="articles.write"),
    Operation("DELETE", "/v1/media/{id}", Scope.WRITE_MEDIA, target="medium", success=204, permission="articles.write"),
]

OPERATIONS += [
    Operation("GET", "/v1/stories", Scope.READ_POSTS),
    Operation("POST", "/v1/stories", Scope.WRITE_POSTS, success=201, permission="articles.write"),
    Operation("GET", "/v1/stories/{id}", Scope.READ_POSTS, target="story"),
    Operation("PATCH", "/v1/stories/{id}", Scope.WRITE_POSTS, target="story", permission="articles.write"),
    Operation(
        "DELETE", "/v1/stories/{id}", Scope.WRITE_POSTS, target="story", success=204, permission="articles.delete"
    ),
    Operation(
        "POST", "/v1/stories/{id}/retry", Scope.WRITE_POSTS, target="failed story", permission="articles.publish"
    ),
]

KEYS = ["missing", "expired", "revoked", "none", "wrong scope", "read", "all", "viewer-owned"]


def scopes_of(key_kind: str, operation: Operation) -> list[str]:
    if key_kind == "none":
        return []
    if key_kind == "read":
        return [Scope.READ_CHANNELS, Scope.READ_POSTS]
    if key_kind == "wrong scope":
        # Every scope but the one the operation needs; for operations without one, a scope none needs.
        return [s for s in ALL_SCOPES if s != operation.scope] if operation.scope else [Scope.READ_MEDIA]
    return list(ALL_SCOPES)


def expected(operation: Operation, key_kind: str, account: str) -> tuple[int, str | None]:
    if key_kind in ("missing", "expired", "revoked"):
        return 401, "authentication_failed"
    if operation.scope and operation.scope not in scopes_of(key_kind, operation):
        return 403, "insufficient_scope"
    owner_is_admin = key_kind != "viewer-owned"
    if operation.admin == "always" and not owner_is_admin:
        return 403, "admin_required"
    if operation.permission and not owner_is_admin:
        return 403, "permission_denied"
    if account == "other":
        return 404, "not_found"
    if operation.admin == "others" and not owner_is_admin:
        return 403, "admin_required"
    return operation.success, None


EDITOR = Writer(may_publish=True)


def failed_story(account) -> Story:
    """A story published to a repository whose job failed for good: one destination to retry."""
    repository = GitDestinationFactory(channel__account=account, channel__team=None).channel
    story = story_create(
        account_id=account.pk,
        writer=EDITOR,
        title="Failed somewhere",
        publication_status="published",
        channels=[ChannelChoice(repository.pk)],
    )
    PublicationJob.objects.filter(channel=repository).update(state=JobState.FAILED, last_error="The host refused.")
    return story


class World:
    """Two accounts, each with an `api` channel, a post on it, a member and the object of the kind the
    operation names. The keys belong to the first account, to its admin or its viewer."""

    def __init__(self, operation: Operation) -> None:
        # The stories list has a story in each account, to show only the key's own.
        kind = operation.target or ("story" if operation.path == "/v1/stories" else "channel")
        self.objects = {name: self._objects(AccountFactory(), kind) for name in ("own", "other")}
        own = self.objects["own"]["account"]
        self.admin = UserFactory(account=own, role=Role.ADMIN)
        self.viewer = UserFactory(account=own, role=Role.VIEWER)

    @staticmethod
    def _objects(account, kind: str) -> dict:
        objects = {"account": account, "user": UserFactory(account=account, role=Role.EDITOR)}
        channel = objects["channel"] = ChannelFactory(account=account, platform="api", team=None)
        objects["post"] = PostFactory(channel=channel)
        if kind == "pending":
            objects["pending"] = ApiPublicationFactory(post__channel=channel).post
        elif kind in ("newsletter", "subscriber"):
            objects["subscriber"] = SubscriberFactory(channel__account=account, channel__team=None)
            objects["newsletter"] = objects["subscriber"].channel
        elif kind == "medium":
            objects["medium"] = MediumFactory(account=account)
        elif kind == "story":
            objects["story"] = story_create(
                account_id=account.pk, writer=EDITOR, title="A story", channels=[ChannelChoice(channel.pk)]
            )
        elif kind == "failed story":
            objects["failed story"] = failed_story(account)
        elif kind == "published":
            objects["published"] = ApiPublicationFactory(
                post__channel=channel, post__publication_status="published", post__published_at=timezone.now()
            ).post
        return objects

    def client(self, key_kind: str, operation: Operation) -> APIClient:
        client = APIClient()
        if key_kind == "missing":
            return client
        past = timezone.now() - timedelta(seconds=1)
        key = ApiKeyFactory(
            user=self.viewer if key_kind == "viewer-owned" else self.admin,
            scopes=scopes_of(key_kind, operation),
            expires_at=past if key_kind == "expired" else timezone.now() + timedelta(days=1),
            revoked_at=past if key_kind == "revoked" else None,
        )
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key.raw}")
        return client

    def request(self, client: APIClient, operation: Operation, account: str | None, *, missing: bool = False):
        target = self.objects[account][operation.target] if operation.target else None
        path, body = operation.path, None
        if operation.target in ("pending", "published", "post", "subscriber"):
            path = path.replace("{channel_id}", str(MISSING if missing else target.channel_id))
        if target is not None:
            ident = str(MISSING if missing else target.pk)
            for name in ("{channel_id}", "{id}", "{user_id}", "{subscriber_id}"):
                path = path.replace(name, ident)
        if operation.path == "/v1/media" and operation.method == "POST":
            upload = io.BytesIO(images.png(32, 24))
            upload.name = "access.png"
            return client.post(path, {"file": upload}, format="multipart")
        if operation.path == "/v1/media/{id}" and operation.method == "PATCH":
            body = {"alt_text": "Changed by a key"}
        elif operation.path == "/v1/sso_tokens":
            body = {"user_id": str(MISSING if missing else target.pk)}
        elif operation.path in ("/v1/stories", "/v1/stories/{id}"):
            body = {"story": {"title": "Written by a key"}}
        elif operation.path == "/v1/stories/{id}/retry":
            body = None
        elif operation.path in ("/v1/channels/{channel_id}/posts", "/v1/channels/{channel_id}/posts/{id}"):
            body = {"post": {"title": "Written by a key"}}
        elif operation.target == "newsletter" and operation.method == "POST":
            body = {"email": "new.reader@example.com"}
        elif operation.method == "POST":
            body = {"email": "new.user@example.com", "name": "New User", "send_invitation": False}
        elif operation.method == "PUT":
            body = {"name": "Changed Name"}
        return getattr(client, operation.method.lower())(path, body, format="json")


CASES = [
    pytest.param(operation, key_kind, account, id=f"{operation} [{key_kind}] [{account or 'no object'}]")
    for operation in OPERATIONS
    for key_kind in KEYS
    for account in (("own", "other") if operation.target else (None,))
]


@pytest.mark.parametrize(("operation", "key_kind", "account"), CASES)
def test_access(operation, key_kind, account):
    world = World(operation)
    client = world.client(key_kind, operation)
    status, code = expected(operation, key_kind, account)

    response = world.request(client, operation, account)

    assert response.status_code == status, response.content
    if code is not None:
        assert response.json()["error"]["code"] == code
    if status == 404:
        # Another account's object answers exactly as one that does not exist: nothing tells them apart.
        unknown = world.request(client, operation, account, missing=True)
        assert (unknown.status_code, unknown.json()) == (404, response.json())
    if status == 200 and operation.method == "GET":
        assert_only_own_objects(world, operation, response.json())


def assert_only_own_objects(world: World, operation: Operation, body: dict) -> None:
    own = world.objects["own"]
    if operation.path == "/v1/channels":
        assert {item["id"] for item in body["data"]} == {own["channel"].pk}
    elif operation.path == "/v1/users":
        members = {own["user"], world.admin, world.viewer}
        assert {item["id"] for item in body["data"]} == {str(user.pk) for user in members}
    elif operation.path == "/v1/me":
        assert body["data"]["account"]["id"] == own["account"].pk
    elif operation.path == "/v1/users/profile":
        assert body["id"] in (str(world.admin.pk), str(world.viewer.pk))
    elif operation.path == "/v1/channels/{channel_id}/posts":
        assert {item["channel"]["id"] for item in body["data"]} == {own["channel"].pk}
    elif operation.path == "/v1/media":
        assert body["data"] == []
    elif operation.path == "/v1/stories":
        assert {item["id"] for item in body["data"]} == {own["story"].pk}
    elif operation.path == "/v1/channels/{channel_id}/subscribers":
        assert {item["id"] for item in body["data"]} == {own["subscriber"].pk}
    elif operation.path == "/v1/channels/{channel_id}/changes":
        # On PostgreSQL the test's own open transaction holds its writes back from the feed.
        assert {item["channel"]["id"] for item in body["data"]} <= {own["channel"].pk}
    else:
        assert str(body.get("data", body)["id"]) == str(own[operation.target].pk)


def test_the_matrix_covers_every_operation_of_the_schema(client):
    schema = client.get("/v1/openapi.json").json()
    documented = {f"{method.upper()} {path}" for path, methods in schema["paths"].items() for method in methods}
    assert {str(operation) for operation in OPERATIONS} == documented
