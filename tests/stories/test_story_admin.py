"""A story's pages in the Settings area: composed once with its channels as checkboxes and each
channel's overrides, saved through the story services (their refusals on the form, the typed text
kept); each channel's fields in its destination's words; a state row per destination and Retry
failed, which retries only what failed; another account's story answered as one that does not exist."""

import pytest

from apps.posts.models import Post
from apps.posts.pipeline_subject import post_publication_failed
from apps.posts.writing import Writer
from apps.publishing.models import JobState, PublicationJob
from apps.stories.models import Story
from apps.stories.services import ChannelChoice, story_create
from apps.users.models import Permission, Role
from tests.conftest import admin_session
from tests.factories import AdminUserFactory, ChannelFactory, GitDestinationFactory, UserFactory

pytestmark = pytest.mark.django_db

ADD = "/admin/stories/story/add/"
EDITOR = Writer(may_publish=True)


@pytest.fixture
def admin_user():
    return AdminUserFactory()


@pytest.fixture
def blog(admin_user):
    return ChannelFactory(account=admin_user.account, platform="blog", title="Blog")


@pytest.fixture
def api(admin_user):
    return ChannelFactory(account=admin_user.account, platform="api", title="Docs API")


def form_data(*channels, **values) -> dict:
    data = {
        "title": "Launch",
        "body": "We launched today.",
        "teaser": "It is out",
        "meta_title": "",
        "meta_description": "",
        "publication_status": "draft",
        "scheduled_at_0": "",
        "scheduled_at_1": "",
        "planned_for_0": "",
        "planned_for_1": "",
        "channels": [channel.pk for channel in channels],
        "_save": "Save",
    }
    return data | values


def test_a_story_composed_with_two_channels_and_an_override_gets_a_post_on_each(admin_user, blog, api):
    client = admin_session(admin_user)
    response = client.post(ADD, form_data(blog, api, **{f"override_{api.pk}_title": "Launch (for the API)"}))

    assert response.status_code == 302, response.context and response.context["adminform"].form.errors
    story = Story.objects.get(account=admin_user.account)
    on_blog, on_api = (Post.objects.get(story_link__story=story, channel=channel) for channel in (blog, api))
    assert (on_blog.title, on_blog.body, on_blog.teaser) == ("Launch", "We launched today.", "It is out")
    assert (on_api.title, on_api.body) == ("Launch (for the API)", "We launched today.")
    assert story.links.get(post=on_api).overrides == {"title": "Launch (for the API)"}
    assert story.created_by == admin_user


def test_a_channel_taken_off_and_a_new_override_go_through_the_story_update(admin_user, blog, api):
    story = story_create(
        account_id=admin_user.account_id, writer=EDITOR, title="Launch", channels=[ChannelChoice(blog.pk)]
    )
    client = admin_session(admin_user)
    response = client.post(
        f"/admin/stories/story/{story.pk}/change/", form_data(api, **{f"override_{api.pk}_teaser": "Own teaser"})
    )

    assert response.status_code == 302
    assert list(Post.objects.filter(story_link__story=story).values_list("channel_id", "teaser")) == [
        (api.pk, "Own teaser")
    ]
    assert not Post.objects.filter(channel=blog).exists()


def test_a_refusal_of_the_services_is_shown_on_the_form_with_the_text_kept(admin_user, blog):
    client = admin_session(admin_user)
    # Scheduled without a time: the service's InvalidInput, on the form.
    response = client.post(ADD, form_data(blog, publication_status="scheduled", body="Typed with care."))

    assert response.status_code == 200
    form = response.context["adminform"].form
    assert form.errors
    assert "Typed with care." in response.content.decode()
    assert not Story.objects.exists() and not Post.objects.exists()


def test_each_channels_fields_are_labelled_in_its_destinations_words(admin_user, blog):
    social = ChannelFactory(account=admin_user.account, platform="linkedin")
    letter = ChannelFactory(account=admin_user.account, platform="newsletter")
    response = admin_session(admin_user).get(ADD)

    labels = {
        section["channel"].pk: {field.name.split("_", 2)[2]: field.label for field in section["fields"]}
        for section in response.context["channel_sections"]
    }
    assert labels[social.pk]["teaser"] == "Commentary (posted instead of the body)"
    assert (labels[letter.pk]["title"], labels[letter.pk]["teaser"]) == ("Subject", "Preview line")
    assert (labels[blog.pk]["title"], labels[blog.pk]["teaser"]) == ("Title", "Teaser")
    page = response.content.decode()
    assert "Commentary (posted instead of the body)" in page and "Preview line" in page


def test_an_empty_override_shows_the_storys_text_as_its_placeholder(admin_user, blog):
    story = story_create(
        account_id=admin_user.account_id, writer=EDITOR, title="Shared title", channels=[ChannelChoice(blog.pk)]
    )
    page = admin_session(admin_user).get(f"/admin/stories/story/{story.pk}/change/").content.decode()
    assert f'name="override_{blog.pk}_title"' in page
    assert 'placeholder="Shared title"' in page


def test_the_social_preview_counts_the_text_as_the_destination_does(admin_user):
    social = ChannelFactory(account=admin_user.account, platform="linkedin")
    client = admin_session(admin_user)
    answer = client.post(
        "/admin/stories/story/preview/",
        {"preview_channel": social.pk, "title": "Hi", "body": "Body", f"override_{social.pk}_teaser": "a_b"},
    )
    assert answer.status_code == 200
    # "Hi", a blank line and the teaser with its reserved "_" escaped as it is sent ("a\\_b"): 2 + 2 + 4.
    assert "8 of 3,000 characters." in answer.content.decode()


def test_a_user_without_the_write_permission_cannot_add_a_story(admin_user, blog):
    reader = UserFactory(account=admin_user.account, role=Role.EDITOR, permissions=[Permission.ARTICLES_READ])
    client = admin_session(reader)

    assert client.get(ADD).status_code == 403
    assert client.post(ADD, form_data(blog)).status_code == 403
    assert client.get("/admin/stories/story/").status_code == 200
    assert not Story.objects.exists()


def test_retry_failed_retries_only_the_destination_that_failed(admin_user, blog):
    git = GitDestinationFactory(channel__account=admin_user.account).channel
    story = story_create(
        account_id=admin_user.account_id,
        writer=EDITOR,
        title="Both",
        publication_status="published",
        channels=[ChannelChoice(blog.pk), ChannelChoice(git.pk)],
    )
    on_git = Post.objects.get(story_link__story=story, channel=git)
    job = PublicationJob.objects.get(post_id=on_git.pk)
    PublicationJob.objects.filter(pk=job.pk).update(state=JobState.FAILED, last_error="The host refused.")
    job.refresh_from_db()
    post_publication_failed(job=job)
    client = admin_session(admin_user)

    page = client.get(f"/admin/stories/story/{story.pk}/change/").content.decode()
    assert "Partially published" in page and "The host refused." in page
    assert f'action="/admin/stories/story/{story.pk}/retry-failed/"' in page
    assert client.get(f"/admin/stories/story/{story.pk}/retry-failed/").status_code == 405

    pressed = client.post(f"/admin/stories/story/{story.pk}/retry-failed/", follow=True)

    assert "1 failed destination(s) handed over again" in pressed.content.decode()
    job.refresh_from_db()
    assert job.state == JobState.QUEUED
    on_blog = Post.objects.get(story_link__story=story, channel=blog)
    assert not PublicationJob.objects.filter(post_id=on_blog.pk).exists()


def test_retry_failed_needs_the_publish_permission(admin_user, blog):
    story = story_create(
        account_id=admin_user.account_id, writer=EDITOR, title="Story", channels=[ChannelChoice(blog.pk)]
    )
    writer = UserFactory(
        account=admin_user.account, role=Role.EDITOR, permissions=[Permission.ARTICLES_READ, Permission.ARTICLES_WRITE]
    )
    assert admin_session(writer).post(f"/admin/stories/story/{story.pk}/retry-failed/").status_code == 403


def test_another_accounts_story_is_answered_as_one_that_does_not_exist(admin_user):
    other = AdminUserFactory()
    theirs = story_create(account_id=other.account_id, writer=EDITOR, title="Their secret plan")
    client = admin_session(admin_user)

    for page in ("change/", "retry-failed/"):
        method = client.post if page == "retry-failed/" else client.get
        answer, missing = method(f"/admin/stories/story/{theirs.pk}/{page}"), method(f"/admin/stories/story/0/{page}")
        assert (answer.status_code, answer["Location"]) == (missing.status_code, missing["Location"])
    listed = client.get("/admin/stories/story/?q=secret").content.decode()
    assert "Their secret plan" not in listed
    preview = client.post("/admin/stories/story/preview/", {"preview_channel": "1", "story": theirs.pk})
    assert preview.status_code == 404


def test_the_list_shows_each_storys_state_times_and_channels_and_searches_titles(admin_user, blog, api):
    story_create(
        account_id=admin_user.account_id,
        writer=EDITOR,
        title="Autumn launch",
        channels=[ChannelChoice(blog.pk), ChannelChoice(api.pk)],
    )
    story_create(account_id=admin_user.account_id, writer=EDITOR, title="Winter sale")
    page = admin_session(admin_user).get("/admin/stories/story/?q=autumn").content.decode()
    assert "Autumn launch" in page and "Winter sale" not in page
    assert "Blog, Docs API" in page and "story-state-draft" in page


def test_a_posts_page_says_which_story_it_is_part_of(admin_user, blog):
    story = story_create(
        account_id=admin_user.account_id, writer=EDITOR, title="The story", channels=[ChannelChoice(blog.pk)]
    )
    post = Post.objects.get(story_link__story=story)
    page = admin_session(admin_user).get(f"/admin/posts/post/{post.pk}/change/").content.decode()
    assert f'Part of story <a href="/admin/stories/story/{story.pk}/change/">The story</a>' in page
    alone = Post.objects.create(channel=blog, title="Alone", slug="alone")
    page = admin_session(admin_user).get(f"/admin/posts/post/{alone.pk}/change/").content.decode()
    assert "Part of story" not in page
