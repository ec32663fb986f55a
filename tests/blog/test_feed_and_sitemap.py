"""A blog's Atom feed and sitemap (apps/blog/feeds.py), read as feed readers and crawlers read them:
parsed as XML against their formats (RFC 4287, sitemaps.org 0.9), and the feed also by feedparser."""

import re
import xml.etree.ElementTree as ET
from datetime import datetime, timedelta
from html.parser import HTMLParser

import feedparser
import pytest
from django.utils import timezone

from apps.blog import feeds
from tests.factories import ChannelFactory, PostFactory, TagFactory

pytestmark = pytest.mark.django_db

ATOM = "{http://www.w3.org/2005/Atom}"
SITEMAP = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
TAG_URI = re.compile(r"tag:[a-z0-9.-]+,\d{4}-\d{2}-\d{2}:\S+")
HOSTILE_BODY = (
    'Intro.\n\n<script>alert("feed")</script>\n\n<img src=x onerror=alert(1)>\n\n[x](javascript:alert(1))\n\nThe end.'
)
START = timezone.now() - timedelta(days=30)


def published(channel, minutes: int = 0, **fields):
    """A published post of the channel, published `minutes` after START."""
    return PostFactory(
        channel=channel, publication_status="published", published_at=START + timedelta(minutes=minutes), **fields
    )


def unpublished_posts(channel) -> None:
    """One post in each state readers never see (all newer than any published one)."""
    later = timezone.now() + timedelta(days=1)
    PostFactory(channel=channel, slug="a-draft", publication_status="draft")
    PostFactory(channel=channel, slug="a-scheduled", publication_status="scheduled", scheduled_at=later)
    PostFactory(channel=channel, slug="a-pending", publication_status="publishing_pending")


def rfc3339(text: str) -> datetime:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    assert moment.tzinfo is not None, text
    return moment


def get_feed(client, channel, path: str | None = None, **headers):
    response = client.get(path or f"/blog/{channel.handle}/feed.xml", **headers)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/atom+xml")
    return response


def atom(response) -> ET.Element:
    root = ET.fromstring(response.content)  # noqa: S314 (the service's own output)
    assert root.tag == f"{ATOM}feed"
    return root


def entry_ids(response) -> list[str]:
    return [entry.findtext(f"{ATOM}id") for entry in atom(response).iter(f"{ATOM}entry")]


def links(element) -> dict[str, str]:
    return {link.get("rel", "alternate"): link.get("href") for link in element.findall(f"{ATOM}link")}


class Tags(HTMLParser):
    def __init__(self, fragment: str):
        super().__init__()
        self.found: list[tuple[str, dict]] = []
        self.feed(fragment)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, dict(attrs)))


def test_the_feed_is_atom_with_what_rfc_4287_requires_of_a_feed_and_its_entries(client, settings):
    channel = ChannelFactory(title="Field Notes", description="Notes from the field.", language="de")
    tags = [TagFactory(account=channel.account, name="birds"), TagFactory(account=channel.account, name="rivers")]
    post = published(channel, title="On herons", slug="on-herons", body="# Herons\n\nTall **birds**.", tags=tags)

    response = get_feed(client, channel)
    root = atom(response)

    assert root.get(XML_LANG) == "de"
    assert root.findtext(f"{ATOM}title") == "Field Notes"
    assert root.findtext(f"{ATOM}subtitle") == "Notes from the field."
    assert TAG_URI.fullmatch(root.findtext(f"{ATOM}id"))
    rfc3339(root.findtext(f"{ATOM}updated"))
    assert root.findtext(f"{ATOM}author/{ATOM}name") == "Field Notes"
    assert links(root) == {
        "alternate": f"{settings.SITE_URL}/blog/{channel.handle}/",
        "self": f"{settings.SITE_URL}/blog/{channel.handle}/feed.xml",
    }

    (entry,) = root.findall(f"{ATOM}entry")
    assert TAG_URI.fullmatch(entry.findtext(f"{ATOM}id"))
    assert entry.findtext(f"{ATOM}title") == "On herons"
    assert rfc3339(entry.findtext(f"{ATOM}published")) == post.published_at
    post.refresh_from_db()
    assert rfc3339(entry.findtext(f"{ATOM}updated")) == post.updated_at
    assert links(entry)["alternate"] == channel.post_url("on-herons")
    content = entry.find(f"{ATOM}content")
    assert content.get("type") == "html"
    assert [tag for tag, _ in Tags(content.text).found] == ["h1", "a", "p", "strong"]
    assert sorted(category.get("term") for category in entry.findall(f"{ATOM}category")) == ["birds", "rivers"]

    parsed = feedparser.parse(response.content)
    assert parsed.bozo == 0, parsed.get("bozo_exception")
    assert parsed.version == "atom10"
    assert parsed.feed.language == "de"
    assert parsed.feed.title == "Field Notes"
    assert [item.id for item in parsed.entries] == [entry.findtext(f"{ATOM}id")]
    assert parsed.entries[0].link == channel.post_url("on-herons")
    assert sorted(tag.term for tag in parsed.entries[0].tags) == ["birds", "rivers"]
    assert parsed.entries[0].content[0].type == "text/html"


def test_an_entry_holds_the_whole_body_sanitized(client):
    channel = ChannelFactory()
    published(channel, body=HOSTILE_BODY, teaser="Just the teaser.")

    content = atom(get_feed(client, channel)).find(f"{ATOM}entry/{ATOM}content").text

    assert "Intro." in content and "The end." in content
    found = Tags(content).found
    assert {tag for tag, _ in found} <= {"p", "img", "a"}
    for _tag, attrs in found:
        assert not any(name.startswith("on") for name in attrs)
        assert not (attrs.get("href") or "").lower().startswith("javascript")
    assert 'alert("feed")' not in content


def test_the_feed_has_only_the_newest_published_posts_newest_first(client, settings):
    assert settings.BLOG_FEED_SIZE == 20
    channel = ChannelFactory()
    posts = [published(channel, minutes=minute) for minute in range(22)]
    unpublished_posts(channel)
    published(ChannelFactory(account=channel.account), minutes=100, slug="other-channels")

    response = get_feed(client, channel)

    newest = posts[::-1][:20]
    assert [entry.findtext(f"{ATOM}title") for entry in atom(response).iter(f"{ATOM}entry")] == [
        post.title for post in newest
    ]
    assert len(set(entry_ids(response))) == 20


def test_an_entry_keeps_its_id_through_a_title_a_slug_and_an_address_change(client):
    channel = ChannelFactory()
    post = published(channel, title="First title", slug="first-slug")
    before = entry_ids(get_feed(client, channel))

    post.title = "A better title"
    post.save()
    assert [entry.findtext(f"{ATOM}title") for entry in atom(get_feed(client, channel)).iter(f"{ATOM}entry")] == [
        "A better title"
    ]
    assert entry_ids(get_feed(client, channel)) == before

    post.slug = "better-slug"
    post.save()
    response = get_feed(client, channel)
    assert links(atom(response).find(f"{ATOM}entry"))["alternate"].endswith("/better-slug/")
    assert entry_ids(response) == before

    channel.domain = "notes.example.org"
    channel.save()
    on_domain = get_feed(client, channel, "/feed.xml", HTTP_HOST="notes.example.org")
    root = atom(on_domain)
    assert links(root)["self"] == "https://notes.example.org/feed.xml"
    assert links(root.find(f"{ATOM}entry"))["alternate"] == "https://notes.example.org/better-slug/"
    assert entry_ids(on_domain) == before
    assert entry_ids(get_feed(client, channel)) == before


def sitemap(client, path: str, **headers) -> ET.Element:
    response = client.get(path, **headers)
    assert response.status_code == 200, response.status_code
    assert response["Content-Type"].startswith("application/xml")
    return ET.fromstring(response.content)  # noqa: S314 (the service's own output)


def urls(root) -> dict[str, str]:
    """loc -> lastmod of a <urlset>."""
    assert root.tag == f"{SITEMAP}urlset"
    return {url.findtext(f"{SITEMAP}loc"): url.findtext(f"{SITEMAP}lastmod") for url in root.findall(f"{SITEMAP}url")}


def test_the_sitemap_lists_every_published_post_of_the_channel_with_lastmod(client):
    channel = ChannelFactory()
    posts = [published(channel, minutes=minute) for minute in range(3)]
    unpublished_posts(channel)
    published(ChannelFactory(account=channel.account), slug="other-channels")

    listed = urls(sitemap(client, f"/blog/{channel.handle}/sitemap.xml"))

    assert set(listed) == {channel.post_url(post.slug) for post in posts}
    for post in posts:
        post.refresh_from_db()
        lastmod = listed[channel.post_url(post.slug)]
        assert lastmod.startswith(post.updated_at.date().isoformat())
        if "T" in lastmod:
            assert abs(rfc3339(lastmod) - post.updated_at) < timedelta(seconds=1)


def test_a_sitemap_too_long_for_one_file_becomes_an_index_of_pages(client, monkeypatch):
    monkeypatch.setattr(feeds.PostSitemap, "limit", 3)
    channel = ChannelFactory()
    posts = [published(channel, minutes=minute) for minute in range(7)]
    unpublished_posts(channel)
    here = f"/blog/{channel.handle}/sitemap.xml"

    index = sitemap(client, here)

    assert index.tag == f"{SITEMAP}sitemapindex"
    pages = [entry.findtext(f"{SITEMAP}loc") for entry in index.findall(f"{SITEMAP}sitemap")]
    assert pages == [f"{channel.public_url('blog:sitemap')}?p={n}" for n in (1, 2, 3)]
    listed = [urls(sitemap(client, f"{here}?p={n}")) for n in (1, 2, 3)]
    assert [len(page) for page in listed] == [3, 3, 1]
    assert {loc for page in listed for loc in page} == {channel.post_url(post.slug) for post in posts}
    for page in ("99", "0", "abc"):
        assert client.get(f"{here}?p={page}").status_code == 404


def test_a_page_of_the_sitemap_that_does_not_exist_is_a_404(client):
    channel = ChannelFactory()
    published(channel)

    for page in ("2", "99", "abc"):
        assert client.get(f"/blog/{channel.handle}/sitemap.xml?p={page}").status_code == 404


def test_the_sitemap_of_a_blog_on_its_own_domain_names_its_pages_there(client):
    channel = ChannelFactory(domain="notes.example.org")
    published(channel, slug="on-herons")

    for path, headers in (
        (f"/blog/{channel.handle}/sitemap.xml", {}),
        ("/sitemap.xml", {"HTTP_HOST": "notes.example.org"}),
    ):
        assert list(urls(sitemap(client, path, **headers))) == ["https://notes.example.org/on-herons/"]
