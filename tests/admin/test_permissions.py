"""What each permission allows in the Settings area: the table in docs/security.md is the access
table (apps/settings_area/access.py), and a user holding a single permission can do, through the admin's
own pages, exactly what its row says on every registered model admin, and nothing else."""

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib import admin
from django.contrib.auth.models import AnonymousUser

from apps.settings_area.access import access_table, allowed_actions
from apps.users.models import Permission, Role
from apps.webhooks import services as webhook_services
from tests.conftest import admin_session
from tests.factories import UserFactory
from tests.security.test_admin_access_matrix import MODELS, NOBODY, build_side, urls

pytestmark = pytest.mark.django_db

ACTIONS = ("view", "add", "change", "delete")


def documented_table() -> dict[str, dict[str, set[str]]]:
    text = (Path(settings.BASE_DIR) / "docs" / "security.md").read_text()
    section = text.split("## What each permission allows", 1)[1].split("\n## ", 1)[0]
    table = {}
    for permission, allows in re.findall(r"^\| `([a-z_.]+)` \| ([^|]+) \|", section, flags=re.MULTILINE):
        table[permission] = {
            model: set(actions.split(", "))
            for model, actions in re.findall(r"`([a-z_]+\.[a-z_]+)`: ([a-z, ]+)", allows)
        }
    return table


def test_the_documented_table_is_the_access_table():
    expected = {permission: {m: set(a) for m, a in models.items()} for permission, models in access_table().items()}
    assert documented_table() == expected


def test_the_access_table_names_every_permission_and_only_those():
    assert list(access_table()) == Permission.values


def test_every_model_in_the_table_exists():
    from django.apps import apps

    for models in access_table().values():
        for label in models:
            assert apps.get_model(label) is not None


def may(permission: str, label: str, action: str) -> bool:
    return action not in NOBODY.get(label, "").split() and action in allowed_actions([permission], label)


@pytest.fixture
def side(monkeypatch):
    monkeypatch.setattr(webhook_services, "enqueue", lambda ids, manual=False: None)
    return build_side("Alpha")


@pytest.mark.parametrize("permission", Permission.values)
def test_a_user_holding_one_permission_can_do_exactly_what_it_allows(side, permission):
    # An admin by role, so that it enters the Settings area; what it may do there is its permission's.
    user = UserFactory(account=side.account, role=Role.ADMIN, permissions=[permission])
    client = admin_session(user)
    reached = set()
    for label in MODELS:
        base, pk = urls(label), side.objects[label].pk
        seen = may(permission, label, "view") or may(permission, label, "change")
        listed = client.get(base)
        assert listed.status_code == (200 if seen else 403), (label, "list")
        page = client.get(f"{base}{pk}/change/")
        assert page.status_code == (200 if seen else 403), (label, "change page")
        if seen:
            reached.add(label)
        if label == "publishing_newsletter.edition":
            # An edition is never edited: its "change" is "Send to uncertain".
            asked = client.get(f"{base}{pk}/send-uncertain/")
            assert asked.status_code == (200 if may(permission, label, "change") else 403), label
        elif seen:
            assert page.context["has_change_permission"] == may(permission, label, "change"), label
        assert client.get(f"{base}add/").status_code == (200 if may(permission, label, "add") else 403), label
        deleted = client.get(f"{base}{pk}/delete/")
        assert deleted.status_code == (200 if may(permission, label, "delete") else 403), (label, "delete page")
    index = client.get("/admin/")
    shown = {
        f"{app['app_label']}.{model['object_name'].lower()}"
        for app in index.context["app_list"]
        for model in app["models"]
    }
    assert shown == reached


@pytest.mark.parametrize("permission", Permission.values)
def test_publishing_a_post_takes_articles_publish(side, permission):
    user = UserFactory(account=side.account, role=Role.EDITOR, permissions=[permission, Permission.ARTICLES_READ])
    client = admin_session(user)
    post = side.objects["posts.post"]
    may_publish = permission == Permission.ARTICLES_PUBLISH
    action_form = client.get("/admin/posts/post/").context["action_form"]  # None: no action at all
    actions = {name for name, _ in action_form.fields["action"].choices} if action_form else set()
    publishing = {"publish_now", "mark_publishing_pending", "confirm_publication", "unpublish"}
    assert (publishing <= actions) == may_publish
    assert not (publishing & actions) or may_publish
    page = client.get(f"/admin/posts/post/{post.pk}/change/").content.decode()
    assert ("Publish now" in page) == may_publish
    pressed = client.post(f"/admin/posts/post/{post.pk}/publish-now/")
    assert pressed.status_code == (302 if may_publish else 403)


def test_an_editor_without_articles_publish_sees_the_status_but_cannot_change_it(side):
    user = UserFactory(
        account=side.account, role=Role.EDITOR, permissions=[Permission.ARTICLES_READ, Permission.ARTICLES_WRITE]
    )
    response = admin_session(user).get(f"/admin/posts/post/{side.objects['posts.post'].pk}/change/")
    form = response.context["adminform"].form
    assert "publication_status" not in form.fields and "scheduled_at" not in form.fields
    assert "title" in form.fields


def test_every_registered_model_admin_is_in_the_access_table_or_the_operators_alone():
    placed = {label for models in access_table().values() for label in models}
    assert set(MODELS) - placed == {"accounts.account"}
    assert all(label in placed or label == "accounts.account" for label in MODELS)
    assert admin.site._registry  # the site the test client's pages use


def test_the_index_says_when_the_users_permissions_are_not_their_roles_defaults(side):
    notice = "are not your role's defaults"
    assert notice not in admin_session(side.editor).get("/admin/").content.decode()
    side.editor.permissions = [Permission.ARTICLES_READ]
    side.editor.save()
    assert notice in admin_session(side.editor).get("/admin/").content.decode()


def test_django_asks_the_settings_areas_backend_what_a_user_may_do():
    """The table answers through Django's authentication backends, as PermissionsMixin's users are
    answered: the user model knows nothing of the admin's models."""
    assert "apps.settings_area.access.AccessBackend" in settings.AUTHENTICATION_BACKENDS
    editor = UserFactory(role=Role.EDITOR, permissions=[Permission.ARTICLES_READ])
    assert editor.has_perm("posts.view_post") and not editor.has_perm("posts.change_post")
    assert editor.has_module_perms("posts") and not editor.has_module_perms("webhooks")


def test_an_anonymous_visitor_may_do_nothing_in_the_settings_area():
    visitor = AnonymousUser()
    assert not visitor.has_perm("posts.view_post")
    assert not visitor.has_module_perms("posts")
