"""What a destination kind adds to the public site, asked of the module its registry entry names
(`DestinationKind.site`, apps/blog/site.py): this module plays a kind's, registered for the blog
platform, so the blog's pages show what any kind would add, and the front page names every kind."""

import pytest
from django.http import HttpResponse

from apps.core import destinations
from apps.core.destinations import DestinationKind, IndexPart
from tests.blog.test_public_site import path_of, published
from tests.factories import ChannelFactory, TagFactory

pytestmark = pytest.mark.django_db

# What the kind's site module declares (read by apps/blog/site.py and views.py).
POSTS = "dispatches"
NOTHING_YET = "No pigeon has flown yet."
ROBOTS_DISALLOW = ("/loft/",)
PART = "<p class=loft>Send a pigeon to {{ channel.title }} ({{ loft }})</p>\n"


def index_part(channel) -> IndexPart:
    return IndexPart("kind_pages/loft.html", {"loft": "north tower"}, form=True)


def index_post(request, channel, look) -> HttpResponse:
    return HttpResponse(f"Coo, {channel.title}: {request.POST['message']}", status=202)


@pytest.fixture(autouse=True)
def pigeons(monkeypatch, settings, tmp_path):
    """A kind of label "Carrier pigeons" whose site module is this one, for blog channels; its part's
    template in a template folder of its own."""
    (tmp_path / "kind_pages").mkdir()
    (tmp_path / "kind_pages" / "loft.html").write_text(PART)
    settings.TEMPLATES = [{**settings.TEMPLATES[0], "DIRS": [*settings.TEMPLATES[0]["DIRS"], tmp_path]}]
    monkeypatch.setattr(destinations, "_kinds", dict(destinations._kinds))
    destinations.register(
        DestinationKind(
            platform="blog", load=lambda channel_id: None, missing="", label="Carrier pigeons", site=__name__
        )
    )


def test_the_front_page_names_blogs_and_every_destination_kind_by_its_label(client):
    page = client.get("/").content.decode()

    labels = [kind.label for kind in destinations.kinds() if kind.label]
    assert f"Write once, publish to {', '.join(['blogs', *labels])} and more." in page
    assert "Carrier pigeons" in page


def test_the_index_shows_the_kinds_part_above_the_posts_in_the_kinds_words(client):
    channel = ChannelFactory(team=None, title="Pigeon Post", description="")

    response = client.get(path_of(channel.public_url()))

    page = response.content.decode()
    assert "<p class=loft>Send a pigeon to Pigeon Post (north tower)</p>" in page
    assert NOTHING_YET in page and "Nothing published yet." not in page
    assert '<meta name="description" content="The latest dispatches of Pigeon Post.">' in page
    # The part has a form that posts to the index: the page's policy lets it.
    assert "form-action 'self'" in response["Content-Security-Policy"]


def test_a_tags_page_shows_no_part_and_keeps_its_policy_without_forms(client):
    channel = ChannelFactory(team=None, title="Pigeon Post")
    published(channel, slug="first-flight", tags=[TagFactory(account=channel.account, name="flights")])

    response = client.get(path_of(channel.public_url("blog:tag", tag="flights")))

    assert "class=loft" not in response.content.decode()
    assert "form-action 'none'" in response["Content-Security-Policy"]


def test_a_post_on_the_index_is_the_kinds_to_answer(client):
    channel = ChannelFactory(team=None, title="Pigeon Post")

    response = client.post(path_of(channel.public_url()), {"message": "hello"})

    assert (response.status_code, response.content.decode()) == (202, "Coo, Pigeon Post: hello")


def test_robots_txt_keeps_crawlers_out_of_the_paths_the_kinds_pages_name(client):
    lines = client.get("/robots.txt").content.decode().splitlines()

    assert "Disallow: /loft/" in lines
    assert lines.index("Disallow: /loft/") < lines.index("Allow: /blog/")
