from datetime import timedelta
from unittest import mock

import pytest
from django.contrib.admin.models import LogEntry
from django.utils import timezone

from apps.posts import admin as posts_admin
from apps.posts.models import ApiPublication, Post
from tests.factories import (
    AccountFactory,
    ApiPublicationFactory,
    ChannelFactory,
    MediaFactory,
    PostFactory,
    TagFactory,
    TeamFactory,
)

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/posts/post/"


def change_url(post: Post) -> str:
    return f"/admin/posts/post/{post.pk}/change/"


def management(prefix: str, total: int, initial: int) -> dict:
    return {
        f"{prefix}-TOTAL_FORMS": total,
        f"{prefix}-INITIAL_FORMS": initial,
        f"{prefix}-MIN_NUM_FORMS": 0,
        f"{prefix}-MAX_NUM_FORMS": 1000,
    }


def form_data(post: Post | None = None, *, media: list[dict] | None = None, **changes) -> dict:
    """The post admin's POST data: the post's stored values, then `changes`; `media` lists the
    inline's rows (an existing row carries its `id`)."""
    values = {"publication_status": "draft", "scheduled_at": None, "tags": []}
    if post is not None:
        values |= {name: getattr(post, name) for name in posts_admin.CONTENT_FIELDS}
        values |= {
            "publication_status": post.publication_status,
            "scheduled_at": post.scheduled_at,
            "tags": [tag.pk for tag in post.tags.all()],
        }
        if media is None:
            media = [
                {
                    "id": m.pk,
                    "position": m.position,
                    "kind": m.kind,
                    "url": m.url,
                    "alt_text": m.alt_text,
                    "width": m.width or "",
                    "height": m.height or "",
                }
                for m in post.media.all()
            ]
    values |= changes
    media = media or []
    scheduled_at = values.pop("scheduled_at")
    data = {name: "" if value is None else value for name, value in values.items() if name != "tags"}
    if values["tags"]:
        data["tags"] = values["tags"]
    data["scheduled_at_0"] = scheduled_at.strftime("%Y-%m-%d") if scheduled_at else ""
    data["scheduled_at_1"] = scheduled_at.strftime("%H:%M:%S") if scheduled_at else ""
    existing = [row for row in media if row.get("id")]
    data |= management("media", len(media), len(existing))
    for index, row in enumerate(existing + [row for row in media if not row.get("id")]):
        for name, value in row.items():
            data[f"media-{index}-{name}"] = value
        if post is not None:
            data[f"media-{index}-post"] = post.pk
    records = 1 if post is not None and ApiPublication.objects.filter(post=post).exists() else 0
    data |= management("api_publication", records, records)
    return data


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


# --- pages render ---


def test_changelist_renders_with_every_filter_and_search(admin_client):
    team = TeamFactory()
    PostFactory(channel=ChannelFactory(account=team.account, team=team, platform="api"))
    for query in (
        "",
        "?publication_status__exact=draft",
        "?channel__platform__exact=api",
        f"?channel__team__id__exact={team.pk}",
        "?q=Post",
    ):
        response = admin_client.get(CHANGELIST + query)
        assert response.status_code == 200, query
        assert response.context["cl"].result_count == 1, query


def test_change_page_shows_the_publication_record_read_only(admin_client):
    confirmed = timezone.now()
    record = ApiPublicationFactory(confirmed_at=confirmed, external_id="ext-77", post__publication_status="published")
    response = admin_client.get(change_url(record.post))
    assert response.status_code == 200
    html = response.content.decode()
    assert "ext-77" in html
    assert 'name="api_publication-0-external_id"' not in html  # shown, not editable


def test_add_page_renders(admin_client):
    assert admin_client.get("/admin/posts/post/add/").status_code == 200


# --- saving goes through the services ---


def test_content_edit_goes_through_post_update_content_once(admin_client):
    post = PostFactory(title="Old title")
    tag = TagFactory(account=post.channel.account)
    with mock.patch.object(posts_admin, "post_update_content", wraps=posts_admin.post_update_content) as service:
        response = admin_client.post(change_url(post), form_data(post, title="New title", tags=[tag.pk]))
    assert response.status_code == 302
    service.assert_called_once()
    assert service.call_args.kwargs["post"].pk == post.pk
    assert service.call_args.kwargs["title"] == "New title"
    post.refresh_from_db()
    assert post.title == "New title"
    assert list(post.tags.all()) == [tag]


def test_admin_save_records_the_fields_the_service_changed(admin_client):
    post = PostFactory(title="Old title")
    admin_client.post(change_url(post), form_data(post, title="New title", body="New body"))
    entry = LogEntry.objects.get(object_id=str(post.pk))
    assert entry.get_change_message() == "Changed title and body."


def test_media_inline_changes_go_through_the_service(admin_client):
    post = PostFactory()
    keep, drop = MediaFactory.create_batch(2, post=post)
    rows = [
        {
            "id": keep.pk,
            "position": 1,
            "kind": "image",
            "url": "https://cdn.example.com/kept.png",
            "alt_text": "",
            "width": "",
            "height": "",
        },
        {
            "id": drop.pk,
            "position": 0,
            "kind": "image",
            "url": drop.url,
            "alt_text": "",
            "width": "",
            "height": "",
            "DELETE": "on",
        },
        {
            "position": 0,
            "kind": "video",
            "url": "https://cdn.example.com/new.mp4",
            "alt_text": "Clip",
            "width": "",
            "height": "",
        },
    ]
    with mock.patch.object(posts_admin, "post_update_content", wraps=posts_admin.post_update_content) as service:
        response = admin_client.post(change_url(post), form_data(post, media=rows))
    assert response.status_code == 302
    service.assert_called_once()
    media = list(post.media.all())
    assert [(m.url, m.position) for m in media] == [
        ("https://cdn.example.com/new.mp4", 0),
        ("https://cdn.example.com/kept.png", 1),
    ]
    assert media[1].pk == keep.pk


def test_add_creates_through_the_service_with_tags_and_media(admin_client):
    channel = ChannelFactory()
    tag = TagFactory(account=channel.account)
    data = form_data(
        channel=channel.pk,
        title="Fresh",
        slug="fresh",
        body="Hi",
        tags=[tag.pk],
        media=[
            {
                "position": 0,
                "kind": "image",
                "url": "https://cdn.example.com/f.png",
                "alt_text": "",
                "width": 10,
                "height": 10,
            }
        ],
    )
    with mock.patch.object(posts_admin, "post_create", wraps=posts_admin.post_create) as service:
        response = admin_client.post("/admin/posts/post/add/", data)
    assert response.status_code == 302
    service.assert_called_once()
    post = Post.objects.get(slug="fresh")
    assert post.channel == channel
    assert post.publication_status == "draft"
    assert list(post.tags.all()) == [tag]
    assert post.media.get().width == 10


def test_tag_of_another_account_is_a_form_error(admin_client):
    channel = ChannelFactory()
    foreign = TagFactory(account=AccountFactory())
    response = admin_client.post("/admin/posts/post/add/", form_data(channel=channel.pk, title="T", tags=[foreign.pk]))
    assert response.status_code == 200
    assert "belong to another account" in str(response.context["adminform"].form.errors["tags"])
    assert not Post.objects.exists()


def test_scheduling_from_the_admin(admin_client):
    post = PostFactory()
    when = (timezone.now() + timedelta(days=3)).replace(microsecond=0)
    response = admin_client.post(change_url(post), form_data(post, publication_status="scheduled", scheduled_at=when))
    assert response.status_code == 302
    post.refresh_from_db()
    assert (post.publication_status, post.scheduled_at) == ("scheduled", when)


def test_scheduling_in_the_past_from_the_admin_is_refused_with_a_clear_message(admin_client):
    post = PostFactory()
    when = (timezone.now() - timedelta(hours=2)).replace(microsecond=0)
    response = admin_client.post(
        change_url(post), form_data(post, publication_status="scheduled", scheduled_at=when), follow=True
    )
    post.refresh_from_db()
    assert post.publication_status == "draft"
    assert any("is in the past" in m for m in messages_of(response))


def test_rescheduling_and_cancelling_from_the_admin(admin_client):
    post = PostFactory()
    first = (timezone.now() + timedelta(days=1)).replace(microsecond=0)
    admin_client.post(change_url(post), form_data(post, publication_status="scheduled", scheduled_at=first))
    post.refresh_from_db()
    later = first + timedelta(days=2)
    admin_client.post(change_url(post), form_data(post, publication_status="scheduled", scheduled_at=later))
    post.refresh_from_db()
    assert post.scheduled_at == later
    admin_client.post(change_url(post), form_data(post, publication_status="draft", scheduled_at=None))
    post.refresh_from_db()
    assert (post.publication_status, post.scheduled_at) == ("draft", None)


def test_status_change_on_an_api_channel_runs_the_workflow(admin_client):
    record = ApiPublicationFactory()
    post = record.post
    response = admin_client.post(change_url(post), form_data(post, publication_status="published"))
    assert response.status_code == 302
    post.refresh_from_db()
    record.refresh_from_db()
    assert post.publication_status == "published"
    assert record.confirmed_at == post.published_at


def test_refused_status_change_keeps_the_content_and_says_why(admin_client):
    post = PostFactory(channel=ChannelFactory(platform="api"), publication_status="draft", title="Before")
    response = admin_client.post(
        change_url(post), form_data(post, title="After", publication_status="published"), follow=True
    )
    post.refresh_from_db()
    assert post.title == "After"
    assert post.publication_status == "draft"
    assert any("The status was not changed" in m and "publishing_pending" in m for m in messages_of(response))


# --- actions ---


def test_actions_run_the_workflow_and_report_failures(admin_client):
    api = ChannelFactory(platform="api")
    pending = ApiPublicationFactory(post__channel=api).post
    draft = PostFactory(channel=api)
    blog_post = PostFactory(channel=ChannelFactory(platform="blog"))
    response = admin_client.post(
        CHANGELIST, {"action": "confirm_publication", "_selected_action": [pending.pk, draft.pk]}, follow=True
    )
    pending.refresh_from_db()
    assert pending.publication_status == "published"
    assert any("1 post(s) published" in m for m in messages_of(response))
    assert any("publishing_pending" in m for m in messages_of(response))

    admin_client.post(CHANGELIST, {"action": "unpublish", "_selected_action": [pending.pk]})
    pending.refresh_from_db()
    assert pending.publication_status == "draft"

    response = admin_client.post(
        CHANGELIST, {"action": "mark_publishing_pending", "_selected_action": [draft.pk, blog_post.pk]}, follow=True
    )
    draft.refresh_from_db()
    assert draft.publication_status == "publishing_pending"
    assert ApiPublication.objects.filter(post=draft).exists()
    assert any("api" in m for m in messages_of(response) if blog_post.title in m)
