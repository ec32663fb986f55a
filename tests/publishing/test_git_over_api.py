"""A git channel's posts written over the API reach the repository as the Settings area's do: a post
created `published` is committed, an edit of it is committed again, a delete removes its file. Each
step runs the channel's jobs against a real bare repository, as the worker does."""

import pytest

from apps.publishing.services import channel_run
from tests.factories import AdminUserFactory, ApiKeyFactory
from tests.publishing.conftest import files, front_matter, history

pytestmark = pytest.mark.django_db

PATH = "content/posts/from-the-api.md"


@pytest.fixture
def api(git_channel, client_for):
    return client_for(ApiKeyFactory(user=AdminUserFactory(account=git_channel.account)))


def test_a_post_created_published_edited_and_deleted_over_the_api_is_committed_each_time(api, git_channel, bare_repo):
    created = api.post(
        f"/v1/channels/{git_channel.id}/posts",
        {"post": {"title": "From the API", "body": "First words.\n", "publication_status": "published"}},
        format="json",
    )
    assert created.status_code == 201, created.json()
    # As Publish now: the destination publishes it, and the post is published when its job succeeds.
    assert created.json()["data"]["publication"]["action"] == "publish"
    channel_run(git_channel.pk)
    url = f"/v1/channels/{git_channel.id}/posts/{created.json()['data']['id']}"
    assert api.get(url).json()["data"]["publication_status"] == "published"
    assert front_matter(files(bare_repo)[PATH])[1] == "\nFirst words.\n"

    edited = api.patch(url, {"post": {"body": "Second words.\n"}}, format="json", HTTP_IF_MATCH=api.get(url)["ETag"])
    assert edited.status_code == 200
    channel_run(git_channel.pk)
    assert front_matter(files(bare_repo)[PATH])[1] == "\nSecond words.\n"

    assert api.delete(url).status_code == 204
    channel_run(git_channel.pk)
    assert PATH not in files(bare_repo)
    assert [commit.message.decode().split("\n")[0] for commit in history(bare_repo)][:3] == [
        "Unpublish “From the API”",
        "Update “From the API”",
        "Publish “From the API”",
    ]
