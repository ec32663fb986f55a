"""Every registered model admin, with every kind of admin user, on its own account's objects and
on another account's.

Who gets what (issue 13):
- the operator (a superuser of no account) sees and changes everything;
- an account's admin gets its Settings area (webhooks, API keys, users, SSO tokens) and content;
- its editor gets content only (posts and tags, with no deletion of posts: articles.delete is not
  among an editor's default permissions; channels and teams to look at);
- its viewer gets a "no access" page (403); a suspended admin is signed out at the next request;
- another account's object is answered exactly as an id that does not exist, and no page shown
  to a user of one account names anything of the other (names, e-mails, URLs, secrets, prefixes).
"""

from dataclasses import dataclass, field
from datetime import timedelta

import pytest
from django.apps import apps as django_apps
from django.contrib import admin
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.admin.utils import label_for_field
from django.contrib.contenttypes.models import ContentType
from django.test import Client, RequestFactory
from django.utils import timezone

from apps.core import crypto
from apps.core.scoping import account_path
from apps.publishing.bluesky.models import BlueskyConnection
from apps.publishing.linkedin.models import LinkedInConnection
from apps.publishing.mastodon.models import MastodonApp, MastodonConnection
from apps.publishing.newsletter.models import Edition, Newsletter, Suppression, email_hash
from apps.stories.models import Story
from apps.users.models import Role, Status
from apps.webhooks import services as webhook_services
from apps.webhooks.models import Attempt, Delivery, Event
from tests.conftest import admin_session
from tests.factories import (
    AccountFactory,
    ApiKeyFactory,
    ApiPublicationFactory,
    ChannelFactory,
    GitDestinationFactory,
    MediaFactory,
    MediumFactory,
    OperatorFactory,
    PublicationJobFactory,
    SsoTokenFactory,
    SubscriberFactory,
    TagFactory,
    TeamFactory,
    UserFactory,
    WebhookEndpointFactory,
)

pytestmark = pytest.mark.django_db

ALL = "view add change delete"
# The spec of the Settings area, written out (not read from the code it checks): what an
# account's admin and editor may do with each model; anything else is refused.
AREA = {
    "accounts.account": {"admin": "", "editor": ""},
    "accounts.apikey": {"admin": "view add change", "editor": ""},
    "accounts.ssotoken": {"admin": "view", "editor": ""},
    "users.user": {"admin": ALL, "editor": ""},
    "channels.team": {"admin": ALL, "editor": "view"},
    "channels.channel": {"admin": ALL, "editor": "view"},
    # An editor's default permissions (articles read, write, publish) do not delete posts.
    "posts.post": {"admin": ALL, "editor": "view add change"},
    "stories.story": {"admin": ALL, "editor": "view add change"},
    "posts.tag": {"admin": ALL, "editor": ALL},
    # The media library: whoever writes posts uploads, describes and deletes (articles.write).
    "media.medium": {"admin": ALL, "editor": ALL},
    "webhooks.webhookendpoint": {"admin": ALL, "editor": ""},
    "webhooks.delivery": {"admin": "view", "editor": ""},
    # A post's jobs: everyone who edits posts sees them and may retry them ("change").
    "publishing.publicationjob": {"admin": "view change", "editor": "view change"},
    # Where a channel publishes, with its credentials: admins only.
    "publishing_git.gitdestination": {"admin": ALL, "editor": ""},
    "publishing_linkedin.linkedinconnection": {"admin": ALL, "editor": ""},
    "publishing_bluesky.blueskyconnection": {"admin": ALL, "editor": ""},
    "publishing_mastodon.mastodonconnection": {"admin": ALL, "editor": ""},
    # A newsletter's readers are personal data: admins only. A suppression's "delete" is "Lift";
    # an edition's "change" is "Send to uncertain".
    "publishing_newsletter.newsletter": {"admin": "view add change", "editor": ""},
    "publishing_newsletter.subscriber": {"admin": "view add delete", "editor": ""},
    "publishing_newsletter.suppression": {"admin": "view delete", "editor": ""},
    "publishing_newsletter.edition": {"admin": "view change", "editor": ""},
}
# What no one may do, whatever their role: these records are written by the service only.
NOBODY = {
    "accounts.ssotoken": "add change",
    "webhooks.delivery": "add change",
    "publishing.publicationjob": "add delete",
    # Made by "Connect LinkedIn" (OAuth), never by a form.
    "publishing_linkedin.linkedinconnection": "add",
    # Made by "Connect Bluesky" on the channel's page, never by the model's add form.
    "publishing_bluesky.blueskyconnection": "add",
    # Made by "Connect Mastodon" (OAuth), never by a form.
    "publishing_mastodon.mastodonconnection": "add",
    "publishing_newsletter.newsletter": "delete",
    # Added, imported and erased; their status is theirs to change (confirm, unsubscribe).
    "publishing_newsletter.subscriber": "change",
    "publishing_newsletter.suppression": "add change",
    "publishing_newsletter.edition": "add delete",
}
# What the operator, who belongs to no account, may not do: a story is composed from its account's
# channels, in that account's Settings area.
NOT_THE_OPERATOR = {"stories.story": "add"}
WHO = ["operator", "admin_a", "editor_a", "viewer_a", "admin_b", "suspended_admin_a"]
MISSING = "987654321"
UUID_MISSING = "00000000-0000-4000-8000-000000000000"
MODELS = sorted(f"{model._meta.app_label}.{model._meta.model_name}" for model in admin.site._registry)


@dataclass
class Side:
    account: object
    admin: object
    editor: object
    viewer: object
    objects: dict = field(default_factory=dict)  # model label -> an object of this account
    secrets: list = field(default_factory=list)  # values that identify this account's data


def build_side(tag: str) -> Side:
    account = AccountFactory(name=f"{tag} Holdings Ltd")
    users = {
        role: UserFactory(
            account=account, role=role, email=f"{tag.lower()}-{role}@{tag.lower()}.example", name=f"{tag} {role} person"
        )
        for role in (Role.ADMIN, Role.EDITOR, Role.VIEWER)
    }
    member = UserFactory(
        account=account,
        role=Role.EDITOR,
        email=f"{tag.lower()}-member@{tag.lower()}.example",
        name=f"{tag} Member Name",
    )
    team = TeamFactory(account=account, name=f"{tag} Team Blue")
    channel = ChannelFactory(account=account, team=team, title=f"{tag} Channel Title", platform="api")
    label = TagFactory(account=account, name=f"{tag.lower()}-tag-name")
    publication = ApiPublicationFactory(
        post__channel=channel, post__title=f"{tag} Post Title", post__slug=f"{tag.lower()}-post-slug"
    )
    post = publication.post
    post.tags.set([label])
    MediaFactory(post=post, url=f"https://cdn.example.net/{tag.lower()}-picture.jpg")
    medium = MediumFactory(account=account, original_name=f"{tag.lower()}-upload.png", alt_text=f"{tag} alt text")
    key = ApiKeyFactory(user=users[Role.ADMIN], name=f"{tag} deploy key")
    token = SsoTokenFactory(user=member)
    endpoint = WebhookEndpointFactory(account=account, url=f"https://hooks.{tag.lower()}.example/receive")
    event = Event.objects.create(account=account, kind="webhook.test", body=f'{{"name": "{tag} event body"}}')
    delivery = Delivery.objects.create(event=event, endpoint=endpoint, status="failed", attempts=5)
    Attempt.objects.create(
        delivery=delivery, number=1, started_at=timezone.now(), request_body=event.body, response_status=500
    )
    git_channel = ChannelFactory(account=account, title=f"{tag} Git Channel", platform="git")
    destination = GitDestinationFactory(
        channel=git_channel, repository_url=f"https://git.{tag.lower()}.example/site.git", token=f"{tag}-token-value"
    )
    linkedin_channel = ChannelFactory(account=account, title=f"{tag} LinkedIn Channel", platform="linkedin")
    connection = LinkedInConnection.objects.create(
        channel=linkedin_channel,
        member_urn=f"urn:li:person:{tag}Member",
        member_name=f"{tag} Member Name",
        access_token_encrypted=crypto.encrypt(f"{tag}-linkedin-access"),
        refresh_token_encrypted=crypto.encrypt(f"{tag}-linkedin-refresh"),
    )
    bluesky_channel = ChannelFactory(account=account, title=f"{tag} Bluesky Channel", platform="bluesky")
    bluesky = BlueskyConnection.objects.create(
        channel=bluesky_channel,
        handle=f"{tag.lower()}-handle.example.com",
        did=f"did:plc:{tag.lower()}bluesky",
        pds_url=f"https://pds.{tag.lower()}.example",
        app_password_encrypted=crypto.encrypt(f"{tag}-bluesky-app-password"),
        access_jwt_encrypted=crypto.encrypt(f"{tag}-bluesky-access"),
    )
    mastodon_app, _created = MastodonApp.objects.get_or_create(
        base_url="https://mastodon.example",
        defaults={"client_id": "client", "client_secret_encrypted": crypto.encrypt("app-secret"), "scopes": "x"},
    )
    mastodon_channel = ChannelFactory(account=account, title=f"{tag} Mastodon Channel", platform="mastodon")
    toots = MastodonConnection.objects.create(
        channel=mastodon_channel,
        app=mastodon_app,
        account_id=f"{tag}1",
        acct=f"{tag.lower()}tooter@mastodon.example",
        display_name=f"{tag} Tooter Name",
        access_token_encrypted=crypto.encrypt(f"{tag}-mastodon-access"),
    )
    job = PublicationJobFactory(
        channel=git_channel,
        post_id=post.pk,
        title=f"{tag} Job Title",
        state="failed",
        last_error=f"{tag} error sentence",
    )
    letter = ChannelFactory(account=account, title=f"{tag} Newsletter", platform="newsletter")
    sender = Newsletter.objects.create(channel=letter, sender_name=f"{tag} Sender Name")
    reader = SubscriberFactory(channel=letter, email=f"reader@{tag.lower()}-readers.example", name=f"{tag} Reader")
    suppression = Suppression.objects.create(
        account=account, email_hash=email_hash(reader.email), reason="bounce", detail=f"{tag} bounce detail"
    )
    edition = Edition.objects.create(
        post_id=post.pk, channel=letter, job_id=job.pk, subject=f"{tag} Edition Subject", html="<p>x</p>", text="x"
    )
    story = Story.objects.create(account=account, title=f"{tag} Story Title")
    side = Side(account=account, admin=users[Role.ADMIN], editor=users[Role.EDITOR], viewer=users[Role.VIEWER])
    side.objects = {
        "accounts.account": account,
        "accounts.apikey": key,
        "accounts.ssotoken": token,
        "users.user": member,
        "channels.team": team,
        "channels.channel": channel,
        "posts.post": post,
        "posts.tag": label,
        "media.medium": medium,
        "webhooks.webhookendpoint": endpoint,
        "webhooks.delivery": delivery,
        "publishing.publicationjob": job,
        "publishing_git.gitdestination": destination,
        "publishing_linkedin.linkedinconnection": connection,
        "publishing_bluesky.blueskyconnection": bluesky,
        "publishing_mastodon.mastodonconnection": toots,
        "publishing_newsletter.newsletter": sender,
        "publishing_newsletter.subscriber": reader,
        "publishing_newsletter.suppression": suppression,
        "publishing_newsletter.edition": edition,
        "stories.story": story,
    }
    side.secrets = [
        account.name,
        member.email,
        member.name,
        *(u.email for u in users.values()),
        team.name,
        channel.title,
        label.name,
        post.title,
        post.slug,
        f"{tag.lower()}-picture.jpg",
        medium.original_name,
        medium.alt_text,
        medium.name,
        key.prefix,
        key.name,
        endpoint.url,
        endpoint.secret,
        str(delivery.pk),
        f"{tag} event body",
        git_channel.title,
        destination.repository_url,
        f"{tag}-token-value",
        destination.token_encrypted,
        job.title,
        job.last_error,
        linkedin_channel.title,
        connection.member_name,
        f"{tag}-linkedin-access",
        f"{tag}-linkedin-refresh",
        connection.access_token_encrypted,
        bluesky_channel.title,
        bluesky.handle,
        f"{tag}-bluesky-app-password",
        f"{tag}-bluesky-access",
        bluesky.app_password_encrypted,
        mastodon_channel.title,
        toots.display_name,
        toots.acct,
        f"{tag}-mastodon-access",
        toots.access_token_encrypted,
        letter.title,
        sender.sender_name,
        reader.email,
        reader.name,
        suppression.email_hash,
        suppression.detail,
        edition.subject,
        story.title,
    ]
    # Each side's admin has changed its own post: the admin log must keep that to their account.
    LogEntry.objects.create(
        user=side.admin,
        content_type=ContentType.objects.get_for_model(post),
        object_id=str(post.pk),
        object_repr=post.title,
        action_flag=CHANGE,
        change_message="[]",
    )
    return side


@pytest.fixture
def world(monkeypatch):
    monkeypatch.setattr(webhook_services, "enqueue", lambda ids, manual=False: None)
    a, b = build_side("Alpha"), build_side("Zulu")
    suspended = UserFactory(account=a.account, role=Role.ADMIN, email="suspended@alpha.example")
    return {"a": a, "b": b, "suspended": suspended, "operator": OperatorFactory(email="root@service.example")}


def user_of(world, who: str):
    a, b = world["a"], world["b"]
    return {
        "operator": world["operator"],
        "admin_a": a.admin,
        "editor_a": a.editor,
        "viewer_a": a.viewer,
        "admin_b": b.admin,
        "suspended_admin_a": world["suspended"],
    }[who]


def signed_in(world, who: str) -> Client:
    user = user_of(world, who)
    client = admin_session(user)
    if who == "suspended_admin_a":
        # Signed in while active; the suspension must take effect at the next request.
        type(user).objects.filter(pk=user.pk).update(status=Status.SUSPENDED)
    return client


def may(who: str, label: str, action: str) -> bool:
    if action in NOBODY.get(label, "").split():
        return False
    if who == "operator":
        return action not in NOT_THE_OPERATOR.get(label, "").split()
    if who in ("viewer_a", "suspended_admin_a"):
        return False
    role = "editor" if who.startswith("editor") else "admin"
    return action in AREA[label][role].split()


def sides(world, who: str) -> tuple[Side, Side | None]:
    """(the user's own side, the side they must never see: None for the operator)."""
    if who == "operator":
        return world["a"], None
    if who == "admin_b":
        return world["b"], world["a"]
    return world["a"], world["b"]


def urls(label: str) -> str:
    return "/admin/{}/{}/".format(*label.split("."))


def assert_refused(response, who: str) -> None:
    if who == "suspended_admin_a":
        assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    else:
        assert response.status_code == 403


def check(response, who: str, allowed: bool) -> None:
    if allowed:
        assert response.status_code == 200, response.status_code
    else:
        assert_refused(response, who)


def snapshot(account) -> dict:
    """Every row of the account's data, in every app of the service."""
    rows = {}
    for app_label in ("accounts", "users", "channels", "posts", "webhooks", "publishing_newsletter", "media"):
        for model in django_apps.get_app_config(app_label).get_models():
            path = account_path(model)
            if path is not None:
                rows[model._meta.label] = list(model.objects.filter(**{path: account.pk}).order_by("pk").values())
    return rows


def column_labels(changelist) -> list[str]:
    return [label_for_field(c, changelist.model, changelist.model_admin) for c in changelist.list_display]


def test_every_registered_admin_is_in_the_table():
    """A model registered later must be placed in the table (and in apps/settings_area/access.py) on purpose."""
    assert set(MODELS) == set(AREA)


@pytest.mark.parametrize("label", MODELS)
@pytest.mark.parametrize("who", WHO)
def test_admin_pages_follow_role_and_account(world, who, label):
    client = signed_in(world, who)
    own, foreign = sides(world, who)
    base = urls(label)
    mine = own.objects[label].pk
    seen = []

    def get(path, **params):
        response = client.get(path, params)
        seen.append(response)
        return response

    can_view = may(who, label, "view")
    check(get(base), who, can_view)
    check(get(base, _facets="1"), who, can_view)
    check(get(base, _popup="1", _to_field="id"), who, can_view)
    check(get(f"{base}{mine}/change/"), who, can_view or may(who, label, "change"))
    check(get(f"{base}add/"), who, may(who, label, "add"))
    check(get(f"{base}{mine}/delete/"), who, may(who, label, "delete"))

    missing = UUID_MISSING if label == "webhooks.delivery" else MISSING
    if foreign is None:
        theirs = world["b"].objects[label].pk
        assert get(f"{base}{theirs}/change/").status_code == (200 if can_view else 403)
    else:
        theirs = foreign.objects[label].pk
        for page in ("change", "delete", "history"):
            answer, as_missing = get(f"{base}{theirs}/{page}/"), get(f"{base}{missing}/{page}/")
            # A sign-in redirect names the page asked for, whichever id it had.
            location = answer.get("Location", "").replace(str(theirs), missing)
            assert (answer.status_code, location) == (as_missing.status_code, as_missing.get("Location", ""))

    if foreign is not None:
        before = snapshot(foreign.account)
        for action in _actions(world, who, label):
            data = {"action": action, "_selected_action": [theirs], "index": 0, "post": "yes", "apply": "1"}
            data["since"] = (timezone.now() - timedelta(days=30)).strftime("%Y-%m-%d %H:%M:%S")
            seen.append(client.post(base, data))
        # Even a user without the model's actions may post one: it must be refused.
        refused = client.post(base, {"action": "delete_selected", "_selected_action": [theirs], "post": "yes"})
        seen.append(refused)
        assert snapshot(foreign.account) == before
        seen.append(client.get("/admin/"))
        for response in seen:
            # Django's "… with ID “x” doesn't exist" echoes the id the user typed, as for any id.
            content = response.content.decode().replace(f"ID \u201c{theirs}\u201d doesn\u2019t exist", "")
            leaked = [value for value in foreign.secrets if value in content]
            assert not leaked, f"{response.request['PATH_INFO']} showed {leaked}"


def _actions(world, who: str, label: str) -> list[str]:
    """The actions the admin offers this user on this model."""
    model_admin = admin.site._registry[django_apps.get_model(label)]
    request = RequestFactory().get("/admin/")
    request.user = user_of(world, who)
    request.user.refresh_from_db()  # the suspended admin's status is changed in the database
    if not model_admin.has_view_or_change_permission(request):
        return []
    return list(model_admin.get_actions(request))


@pytest.mark.parametrize(
    ("label", "field_name"),
    [
        (f"{model._meta.app_label}.{model._meta.model_name}", name)
        for model, model_admin in admin.site._registry.items()
        for name in model_admin.autocomplete_fields
    ],
)
@pytest.mark.parametrize("who", ["admin_a", "editor_a", "admin_b"])
def test_autocomplete_offers_only_the_users_own_objects(world, who, label, field_name):
    client = signed_in(world, who)
    own, foreign = sides(world, who)
    app_label, model_name = label.split(".")
    response = client.get(
        "/admin/autocomplete/", {"app_label": app_label, "model_name": model_name, "field_name": field_name, "term": ""}
    )
    related = django_apps.get_model(label)._meta.get_field(field_name).related_model
    related_label = f"{related._meta.app_label}.{related._meta.model_name}"
    if not may(who, related_label, "view"):
        assert response.status_code == 403
        return
    assert response.status_code == 200
    ids = {int(result["id"]) for result in response.json()["results"]}
    path = account_path(related)
    assert ids == set(related.objects.filter(**{path: own.account.pk}).values_list("pk", flat=True))
    assert ids.isdisjoint(related.objects.filter(**{path: foreign.account.pk}).values_list("pk", flat=True))


def test_the_account_filter_cannot_be_forged_into_a_changelist(world):
    client = signed_in(world, "admin_a")
    response = client.get("/admin/posts/tag/", {"account__id__exact": world["b"].account.pk})
    # Their list offers no account filter, and a list takes no filter it does not offer (400).
    assert response.status_code == 400
    assert world["b"].objects["posts.tag"].name not in response.content.decode()
    # A filter it offers applies within the user's own rows: another account's channel finds nothing.
    response = client.get("/admin/posts/post/", {"channel__id__exact": world["b"].objects["channels.channel"].pk})
    assert response.status_code == 200
    assert response.context["cl"].result_count == 0


def test_the_operator_sees_both_accounts_with_an_account_column(world):
    page = signed_in(world, "operator").get("/admin/channels/channel/").content.decode()
    for side in (world["a"], world["b"]):
        assert side.objects["channels.channel"].title in page
        assert side.account.name in page


@pytest.mark.parametrize("label", [label for label in MODELS if label != "accounts.account"])
def test_every_operator_list_has_an_account_column_and_filter(world, label):
    response = signed_in(world, "operator").get(urls(label))
    assert response.status_code == 200
    changelist = response.context["cl"]
    assert "account" in column_labels(changelist)
    content = response.content.decode()
    for side in (world["a"], world["b"]):
        assert side.account.name in content
    account_filters = [f for f in changelist.filter_specs if getattr(f, "lookup_title", None) == "account"]
    assert account_filters, [type(f).__name__ for f in changelist.filter_specs]


@pytest.mark.parametrize("label", [label for label in MODELS if label != "accounts.account"])
def test_an_account_admins_lists_have_no_account_column_or_filter(world, label):
    response = signed_in(world, "admin_a").get(urls(label))
    if response.status_code == 403:
        return
    changelist = response.context["cl"]
    assert "account" not in column_labels(changelist)
    assert not [f for f in changelist.filter_specs if getattr(f, "lookup_title", None) == "account"]


def test_the_site_refuses_a_model_admin_of_account_data_that_is_not_scoped():
    from django.core.exceptions import ImproperlyConfigured

    from apps.posts.models import Media
    from apps.settings_area.site import ServiceAdminSite

    with pytest.raises(ImproperlyConfigured, match="AccountScopedAdmin"):
        ServiceAdminSite(name="later").register(Media, admin.ModelAdmin)


def test_every_registered_model_admin_is_scoped():
    from apps.core.admin_scoping import AccountScopedAdmin

    unscoped = [
        model._meta.label
        for model, model_admin in admin.site._registry.items()
        if not isinstance(model_admin, AccountScopedAdmin)
    ]
    assert unscoped == []


def test_a_model_registered_later_is_scoped_with_its_own_filters(world):
    """A new admin gets the scoping from its base class, whatever list filters it declares."""
    from django.contrib.admin import RelatedFieldListFilter, RelatedOnlyFieldListFilter

    from apps.core.admin import SettingsModelAdmin
    from apps.posts.models import Media
    from apps.settings_area.site import ServiceAdminSite

    site = ServiceAdminSite(name="later")

    class MediaAdmin(SettingsModelAdmin):
        list_filter = (
            ("post", RelatedFieldListFilter),
            ("post__channel__account", RelatedFieldListFilter),
            ("post__channel", RelatedOnlyFieldListFilter),
            "kind",
        )

    site.register(Media, MediaAdmin)
    model_admin = site._registry[Media]
    request = RequestFactory().get("/")
    request.user = world["a"].admin
    assert set(model_admin.get_queryset(request)) == set(
        Media.objects.filter(post__channel__account=world["a"].account)
    )
    filters = model_admin.get_list_filter(request)
    assert [item if isinstance(item, str) else (item[0], item[1].__name__) for item in filters] == [
        ("post", "AccountRelatedFilter"),
        ("post__channel", "RelatedOnlyFieldListFilter"),
        "kind",
    ]
