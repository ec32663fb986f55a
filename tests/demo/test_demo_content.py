import pytest
from django.utils import timezone

from apps.channels.models import Channel, Team
from apps.posts.models import ApiPublication, Media, Post, Tag
from apps.publishing.newsletter.models import Subscriber
from tests.demo.test_seed_demo import bearer, seed

pytestmark = pytest.mark.django_db


@pytest.fixture
def seeded() -> dict:
    return seed()


def test_output_names_the_channels_and_the_api_cases(seeded):
    for account in seeded["accounts"]:
        assert set(account["channels"]) == {"blog", "git", "linkedin", "mastodon", "bluesky", "newsletter", "api"}
        assert set(account["posts"]) == {
            "pending_with_record",
            "pending_without_record",
            "published_with_record",
            "draft",
            "scheduled_past",
            "scheduled_future",
        }
        for label, channel_id in account["channels"].items():
            channel = Channel.objects.get(pk=channel_id)
            assert channel.account_id == account["id"]
            assert channel.platform == label


def test_each_account_has_teams_a_channel_without_team_and_tags(seeded):
    for account in seeded["accounts"]:
        assert Team.objects.filter(account_id=account["id"]).count() >= 2
        channels = Channel.objects.filter(account_id=account["id"])
        assert channels.filter(team=None).exists()
        assert channels.exclude(team=None).exists()
        assert Tag.objects.filter(account_id=account["id"]).exists()
        assert Post.objects.filter(channel__account_id=account["id"], tags__isnull=False).exists()
        assert Media.objects.filter(post__channel__account_id=account["id"]).exists()


def test_every_platform_has_posts_in_each_of_its_statuses(seeded):
    for account in seeded["accounts"]:
        for label, channel_id in account["channels"].items():
            statuses = set(Post.objects.filter(channel_id=channel_id).values_list("publication_status", flat=True))
            expected = {"draft", "scheduled", "published"} | ({"publishing_pending"} if label == "api" else set())
            assert statuses == expected, label


def test_one_channel_has_at_least_120_posts(seeded):
    blog = seeded["accounts"][0]["channels"]["blog"]
    assert Post.objects.filter(channel_id=blog).count() >= 120


def test_api_channel_cases_are_in_their_documented_states(seeded):
    now = timezone.now()
    for account in seeded["accounts"]:
        posts = {label: Post.objects.get(pk=pk) for label, pk in account["posts"].items()}
        assert {p.channel_id for p in posts.values()} == {account["channels"]["api"]}
        has_record = {label: ApiPublication.objects.filter(post=p).exists() for label, p in posts.items()}
        assert posts["pending_with_record"].publication_status == "publishing_pending"
        assert has_record["pending_with_record"]
        assert posts["pending_without_record"].publication_status == "publishing_pending"
        assert not has_record["pending_without_record"]
        assert posts["published_with_record"].publication_status == "published"
        assert has_record["published_with_record"]
        assert posts["published_with_record"].external_url.startswith("https://")
        assert posts["draft"].publication_status == "draft"
        assert posts["scheduled_past"].publication_status == "scheduled"
        assert posts["scheduled_past"].scheduled_at < now
        assert posts["scheduled_future"].publication_status == "scheduled"
        assert posts["scheduled_future"].scheduled_at > now


def test_the_readme_walkthrough_works_on_demo_data(seeded):
    account = seeded["accounts"][0]
    client = bearer(account["keys"]["all"])
    api, posts = account["channels"]["api"], account["posts"]
    base = f"/v1/channels/{api}/posts"
    response = client.patch(
        f"{base}/{posts['pending_with_record']}/publish",
        {"post": {"external_id": "partner-2001", "external_url": "https://partner.example.com/articles/2001"}},
        format="json",
    )
    assert response.status_code == 200
    assert response.json()["data"]["publication_status"] == "published"
    assert client.patch(f"{base}/{posts['pending_without_record']}/publish").json()["error"]["code"] == "no_publication"
    assert client.patch(f"{base}/{posts['draft']}/publish").json()["error"]["code"] == "invalid_status"
    assert client.patch(f"{base}/{posts['published_with_record']}/unpublish").status_code == 200
    blog_post = Post.objects.filter(channel_id=account["channels"]["blog"]).first()
    blog_url = f"/v1/channels/{blog_post.channel_id}/posts/{blog_post.id}/publish"
    assert client.patch(blog_url).json()["error"]["code"] == "only_api_platform"
    read_only = bearer(account["keys"]["read"])
    assert read_only.patch(f"{base}/{posts['draft']}/publish").status_code == 403
    other = seeded["accounts"][1]
    assert client.get(f"/v1/channels/{other['channels']['api']}").status_code == 404


def test_seeding_twice_adds_nothing_and_restores_the_api_cases():
    first = seed()
    counts = (
        Team.objects.count(),
        Channel.objects.count(),
        Post.objects.count(),
        Tag.objects.count(),
        Media.objects.count(),
        ApiPublication.objects.count(),
    )
    account = first["accounts"][0]
    pending = account["posts"]["pending_with_record"]
    client = bearer(account["keys"]["all"])
    assert client.patch(f"/v1/channels/{account['channels']['api']}/posts/{pending}/publish").status_code == 200

    second = seed()
    assert (
        Team.objects.count(),
        Channel.objects.count(),
        Post.objects.count(),
        Tag.objects.count(),
        Media.objects.count(),
        ApiPublication.objects.count(),
    ) == counts
    assert [(a["channels"], a["posts"]) for a in second["accounts"]] == [
        (a["channels"], a["posts"]) for a in first["accounts"]
    ]
    assert Post.objects.get(pk=pending).publication_status == "publishing_pending"


def test_each_newsletter_has_a_few_confirmed_subscribers_that_only_the_subscribers_scope_reads(seeded):
    for account in seeded["accounts"]:
        newsletter = account["channels"]["newsletter"]
        subscribers = Subscriber.objects.filter(channel_id=newsletter)
        assert subscribers.count() >= 3
        assert set(subscribers.values_list("status", flat=True)) == {"confirmed"}
        assert account["newsletter_url"].endswith("/")
        listed = bearer(account["keys"]["all"]).get(f"/v1/channels/{newsletter}/subscribers")
        assert listed.json()["meta"]["count"] == subscribers.count()
        refused = bearer(account["keys"]["read"]).get(f"/v1/channels/{newsletter}/subscribers")
        assert refused.json()["error"]["code"] == "insufficient_scope"


def test_seeding_again_adds_no_subscriber_twice(seeded):
    before = Subscriber.objects.count()
    seed()
    assert Subscriber.objects.count() == before


def test_each_account_has_a_story_on_every_channel_one_planned_and_one_undated_draft(seeded):
    from apps.stories.selectors import story_get

    for account in seeded["accounts"]:
        stories = {label: story_get(account_id=account["id"], story_id=pk) for label, pk in account["stories"].items()}
        launch = stories["scheduled"]
        assert {destination.channel.pk for destination in launch.destinations} == set(account["channels"].values())
        assert launch.state == "scheduled"
        by_platform = {destination.channel.platform: destination for destination in launch.destinations}
        assert by_platform["newsletter"].title == "Spring release: your monthly letter"
        assert by_platform["blog"].title == launch.title
        assert stories["planned"].planned_for is not None and stories["planned"].state == "draft"
        assert (stories["undated"].planned_for, stories["undated"].scheduled_at) == (None, None)


def test_seeding_again_adds_no_story():
    from apps.stories.models import Story

    seed()
    count = Story.objects.count()
    seed()
    assert Story.objects.count() == count
