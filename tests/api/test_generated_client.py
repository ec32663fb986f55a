"""A client generated from the live `/v1/openapi.json` by openapi-python-client with the tool's
defaults (no config file, no options) is generated without a warning and works against the live
server: it authenticates with an API key, and reads channels, a post and users as typed objects.
This is a user's first try (docs/api.md, Generated clients), so a schema change that breaks a
generator's defaults fails here rather than in their hands."""

import importlib
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from tests.factories import (
    AdminUserFactory,
    ApiKeyFactory,
    ChannelFactory,
    MediaFactory,
    PostFactory,
    TagFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db(transaction=True)

# The package the generator names after the schema's title.
PACKAGE = "content_publishing_service_api_client"


@pytest.fixture(scope="module")
def generated(live_server, django_db_blocker, tmp_path_factory):
    """Generates the client once for the module and imports it: `generated("api.channels.channels_list")`
    is that module of the generated package."""
    out = tmp_path_factory.mktemp("generated-client") / "client"
    # The generator's default post-hooks run `ruff` found on PATH, as in a shell with the venv active.
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", os.defpath)])
    # Each request the live server serves checks its database connection (Django's close_old_connections).
    with django_db_blocker.unblock():
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "openapi_python_client",
                "generate",
                "--url",
                f"{live_server.url}/v1/openapi.json",
                "--output-path",
                str(out),
            ],
            env={**os.environ, "PATH": path},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    # Nothing but its first line: any warning (a skipped endpoint or model, a post-hook that did not
    # run) or error is printed after it.
    assert (result.returncode, result.stdout.splitlines(), result.stderr) == (0, [f"Generating {out}"], ""), (
        result.stdout + result.stderr
    )
    sys.path.insert(0, str(out))
    try:
        yield lambda name: importlib.import_module(f"{PACKAGE}.{name}")
    finally:
        sys.path.remove(str(out))
        for name in [name for name in sys.modules if name == PACKAGE or name.startswith(f"{PACKAGE}.")]:
            del sys.modules[name]


@pytest.fixture
def key():
    return ApiKeyFactory(user=AdminUserFactory())


@pytest.fixture
def api(generated, live_server, key):
    """The generated client, authenticated with the key as its docs say."""
    with generated("client").AuthenticatedClient(base_url=live_server.url, token=key.raw) as client:
        yield client


def test_the_generated_client_lists_the_keys_channels_as_typed_objects(generated, api, key):
    channel = ChannelFactory(account=key.account)
    PostFactory(channel=channel)
    ChannelFactory()  # another account's

    response = generated("api.channels.channels_list").sync_detailed(client=api)

    assert response.status_code == 200
    models = generated("models")
    page = response.parsed
    assert isinstance(page, models.PaginatedChannelList)
    [listed] = page.data
    assert isinstance(listed, models.Channel)
    assert (listed.id, listed.title, listed.posts_count) == (channel.id, channel.title, 1)
    assert listed.platform is models.PlatformEnum.BLOG
    assert isinstance(listed.team, models.Team)
    assert (listed.team.id, listed.team.name) == (channel.team.id, channel.team.name)


def test_the_generated_client_reads_a_post_of_a_channel_as_a_typed_object(generated, api, key):
    channel = ChannelFactory(account=key.account)
    post = PostFactory(channel=channel, meta_title=None)
    post.tags.set([TagFactory(account=key.account, name="release")])
    media = MediaFactory(post=post)

    response = generated("api.posts.channel_posts_retrieve").sync_detailed(
        channel_id=channel.id, id=post.id, client=api
    )

    assert response.status_code == 200
    models = generated("models")
    read = response.parsed.data
    assert isinstance(read, models.PostDetail)
    assert (read.id, read.title, read.body, read.slug) == (post.id, post.title, post.body, post.slug)
    assert read.publication_status is models.PublicationStatusEnum.DRAFT
    assert isinstance(read.created_at, datetime)
    assert read.created_at == post.created_at
    assert (read.published_at, read.meta_title) == (None, None)
    assert [(type(tag), tag.name) for tag in read.tags] == [(models.Tag, "release")]
    assert [(type(item), item.url) for item in read.media] == [(models.Media, media.url)]
    assert (type(read.channel), read.channel.id) == (models.Channel, channel.id)


def test_the_generated_client_gets_a_typed_error_for_another_accounts_post(generated, api):
    post = PostFactory()  # of another account

    response = generated("api.posts.channel_posts_retrieve").sync_detailed(
        channel_id=post.channel_id, id=post.id, client=api
    )

    assert response.status_code == 404
    assert isinstance(response.parsed, generated("models").Error)
    assert response.parsed.error.code == "not_found"


def test_the_generated_client_lists_the_accounts_users_as_typed_objects(generated, api, key):
    editor = UserFactory(account=key.account, role="editor", name="Edith")

    response = generated("api.users.users_list").sync_detailed(client=api, search="Edith")

    assert response.status_code == 200
    models = generated("models")
    page = response.parsed
    assert isinstance(page, models.PaginatedUserListItemList)
    [listed] = page.data
    assert isinstance(listed, models.UserListItem)
    assert (listed.id, listed.email, listed.name) == (str(editor.pk), editor.email, "Edith")
    assert listed.role is models.UserRoleEnum.EDITOR
    assert listed.status is models.UserStatusEnum.ACTIVE
    assert (page.pagination.total, page.pagination.page) == (1, 1)


def test_the_generated_client_creates_a_post_edits_it_with_its_etag_and_reads_it_back(generated, api, key):
    channel = ChannelFactory(account=key.account)
    models = generated("models")
    body = models.PostBodyRequest(post=models.PostFieldsRequest(title="Written by a client", tags=["api"]))

    created = generated("api.posts.channel_posts_create").sync_detailed(channel_id=channel.id, client=api, body=body)

    assert created.status_code == 201
    post = created.parsed.data
    assert isinstance(post, models.PostDetail)
    assert (post.title, [tag.name for tag in post.tags]) == ("Written by a client", ["api"])
    changes = models.PatchedPostChangesBodyRequest(post=models.PostChangesRequest(body="Second thoughts."))
    edited = generated("api.posts.channel_posts_update").sync_detailed(
        channel_id=channel.id, id=post.id, client=api, body=changes, if_match=created.headers["ETag"]
    )
    assert edited.status_code == 200
    read = generated("api.posts.channel_posts_retrieve").sync_detailed(channel_id=channel.id, id=post.id, client=api)
    assert (read.parsed.data.title, read.parsed.data.body) == ("Written by a client", "Second thoughts.")
    assert read.headers["ETag"] == edited.headers["ETag"]


def test_the_generated_client_writes_a_story_for_two_channels_and_reads_each_destination_typed(generated, api, key):
    blog = ChannelFactory(account=key.account, platform="blog")
    feed = ChannelFactory(account=key.account, platform="api")
    models = generated("models")
    body = models.StoryBodyRequest(
        story=models.StoryFieldsRequest(
            title="Written once",
            tags=["api"],
            channels=[
                models.ChannelEntryRequest(id=blog.id),
                models.ChannelEntryRequest(id=feed.id, overrides=models.OverridesFieldsRequest(title="For partners")),
            ],
        )
    )

    created = generated("api.stories.stories_create").sync_detailed(client=api, body=body)

    assert created.status_code == 201
    story = created.parsed.data
    assert isinstance(story, models.Story)
    assert (story.state, story.publication_status) == (models.StoryStateEnum.DRAFT, models.StoryStatusEnum.DRAFT)
    read = generated("api.stories.stories_retrieve").sync_detailed(id=story.id, client=api)
    assert read.headers["ETag"] == created.headers["ETag"]
    posts = {post.channel.id: post for post in read.parsed.data.posts}
    assert all(isinstance(post, models.StoryPost) for post in posts.values())
    assert posts[blog.id].state is models.DestinationStateEnum.DRAFT
    assert (posts[blog.id].title, posts[feed.id].title) == ("Written once", "For partners")
