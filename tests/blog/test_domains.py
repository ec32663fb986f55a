"""A blog on a domain of its own: the Host that names a blog channel's domain gets that blog at
"/", every other Host that is not the service's stays refused; and the channel settings that shape
a public site refuse what would break it."""

import xml.etree.ElementTree as ET

import pytest
from django.core.exceptions import ValidationError

from apps.core.hosts import AllowedHosts
from tests.blog.test_public_site import published, titles_on
from tests.factories import AccountFactory, ChannelFactory, PostFactory, TagFactory

pytestmark = pytest.mark.django_db

DOMAIN = "blog.example.com"
ATOM = "{http://www.w3.org/2005/Atom}"
SITEMAP = "{http://www.sitemaps.org/schemas/sitemap/0.9}"


@pytest.fixture
def own_blog():
    channel = ChannelFactory(team=None, title="Own Domain", domain=DOMAIN)
    tag = TagFactory(account=channel.account, name="field notes")
    post = published(channel, title="On its own domain", slug="first-post", tags=[tag])
    return channel, post


def on_domain(client, path: str, host: str = DOMAIN, **extra):
    return client.get(path, HTTP_HOST=host, **extra)


def test_the_blogs_domain_serves_its_index_posts_tags_feed_sitemap_and_robots_at_the_root(client, own_blog):
    index = on_domain(client, "/")
    page = on_domain(client, "/first-post/")
    tag = on_domain(client, "/tags/field%20notes/")
    feed = on_domain(client, "/feed.xml")
    sitemap = on_domain(client, "/sitemap.xml")
    robots = on_domain(client, "/robots.txt")

    assert [r.status_code for r in (index, page, tag, feed, sitemap, robots)] == [200] * 6
    assert titles_on(index.content.decode()) == titles_on(tag.content.decode()) == ["On its own domain"]
    assert f'<link rel="canonical" href="https://{DOMAIN}/first-post/">' in page.content.decode()
    assert f'href="https://{DOMAIN}/tags/field%20notes/"' in page.content.decode()
    assert f'href="https://{DOMAIN}/feed.xml"' in index.content.decode()
    # The service's own output, not untrusted input.
    entries = ET.fromstring(feed.content).findall(f"{ATOM}entry")  # noqa: S314
    assert [entry.find(f"{ATOM}link").get("href") for entry in entries] == [f"https://{DOMAIN}/first-post/"]
    locations = [loc.text for loc in ET.fromstring(sitemap.content).iter(f"{SITEMAP}loc")]  # noqa: S314
    assert locations == [f"https://{DOMAIN}/first-post/"]
    assert f"Sitemap: https://{DOMAIN}/sitemap.xml" in robots.content.decode().splitlines()
    # Host names are case-insensitive.
    assert on_domain(client, "/first-post/", host="BLOG.Example.COM").content == page.content


def test_the_blogs_domain_answers_favicon_ico_with_the_blogs_icon(client, own_blog):
    icon = on_domain(client, "/favicon.ico")
    assert icon.status_code == 200
    assert icon.content == client.get("/favicon.ico").content
    assert icon["Content-Type"] == "image/svg+xml"


def test_the_blog_stays_reachable_on_the_service_host_with_canonical_links_to_its_domain(client, own_blog):
    channel, post = own_blog

    response = client.get(f"/blog/{channel.handle}/{post.slug}/")

    assert response.status_code == 200
    assert f'<link rel="canonical" href="https://{DOMAIN}/first-post/">' in response.content.decode()
    # Its sitemap is named by its own domain's robots.txt, not the service's.
    assert f"https://{DOMAIN}/sitemap.xml" not in client.get("/robots.txt").content.decode()


def test_unknown_paths_and_unpublished_posts_on_the_domain_get_the_blogs_styled_404(client, own_blog):
    channel, _ = own_blog
    PostFactory(channel=channel, slug="a-draft")

    responses = [
        on_domain(client, path)
        for path in ("/a-draft/", "/never-written/", "/no/such/page", "/tags/never-used/", "/admin/", "/v1/channels")
    ]

    assert [response.status_code for response in responses] == [404] * len(responses)
    # One page for every miss, whichever part of the site answered it: nothing tells them apart,
    # and neither the Settings area nor the API is served on a blog's domain.
    assert len({response.content for response in responses}) == 1
    page = responses[0].content.decode()
    assert "Page not found" in page
    assert f'<a href="https://{DOMAIN}/">Go to the latest posts of Own Domain</a>' in page


def test_hosts_that_are_no_blogs_domain_stay_refused(client, own_blog):
    ChannelFactory(platform="git", domain="git.example.com")
    assert on_domain(client, "/").status_code == 200

    for host in ("evil.example.com", "git.example.com", f"www.{DOMAIN}", "example.com"):
        assert on_domain(client, "/", host=host).status_code == 400, host
        assert on_domain(client, "/first-post/", host=host).status_code == 400, host


def test_after_the_domain_changes_the_old_one_is_refused_at_the_next_request(client, own_blog):
    channel, _ = own_blog
    assert on_domain(client, "/first-post/").status_code == 200

    channel.domain = "new.example.net"
    channel.save()

    assert on_domain(client, "/first-post/").status_code == 400
    moved = on_domain(client, "/first-post/", host="new.example.net")
    assert moved.status_code == 200
    assert '<link rel="canonical" href="https://new.example.net/first-post/">' in moved.content.decode()


def test_the_tls_ask_address_says_yes_for_a_blogs_domain_only(client, own_blog):
    # What a proxy getting certificates on demand asks first (Caddy's on_demand_tls ask).
    assert client.get("/blog-domains/check", {"domain": DOMAIN}).status_code == 200
    assert client.get("/blog-domains/check", {"domain": DOMAIN.upper() + "."}).status_code == 200
    for other in ("evil.example.com", "", "x" * 300, "localhost"):
        assert client.get("/blog-domains/check", {"domain": other}).status_code == 404, other
    assert client.get("/blog-domains/check").status_code == 404


def test_a_domain_is_stored_lower_case():
    channel = ChannelFactory(team=None, domain=" Shouting.Example.ORG ")
    channel.refresh_from_db()
    assert channel.domain == "shouting.example.org"
    channel.full_clean()


# --- validation of the public site's settings ---


@pytest.fixture
def refused():
    account = AccountFactory()

    def errors(**fields) -> dict:
        channel = ChannelFactory.build(account=account, team=None, **fields)
        with pytest.raises(ValidationError) as caught:
            channel.full_clean()
        return caught.value.message_dict

    return errors


@pytest.mark.parametrize(
    "domain",
    [
        "https://blog.example.com",
        "blog.example.com:8443",
        "blog.example.com/path",
        "localhost",
        "127.0.0.1",
        "blog",
        "-bad-.example.com",
        "under_score.example.com",
        "two..dots.example.com",
    ],
)
def test_a_domain_must_be_a_bare_host_name(refused, domain):
    assert "domain" in refused(domain=domain)


def test_a_domain_may_not_be_one_of_the_services_own_host_names(refused, settings):
    settings.ALLOWED_HOSTS = AllowedHosts(["cps.example.net", ".svc.example.org", "localhost", "127.0.0.1"])
    for domain in ("cps.example.net", "svc.example.org", "blog.svc.example.org"):
        assert "domain" in refused(domain=domain), domain
    # A subdomain of a name the service has (not a wildcard one) is a blog's own.
    for domain in ("blog.example.net", "blog.cps.example.net"):
        ChannelFactory.build(account=AccountFactory(), team=None, domain=domain).full_clean()


def test_reserved_handles_bad_time_zones_colours_logos_and_languages_are_refused(refused):
    for handle in ("preview", "static", "feed", "not a slug"):
        assert "handle" in refused(handle=handle), handle
    for zone in ("Mars/Olympus_Mons", "utc", "Europe/Berlin "):
        assert "time_zone" in refused(time_zone=zone), zone
    for colour in ("red", "#12345", "#1234567", "#ggg000", "#fff;}body{", "rgb(1,2,3)"):
        assert "accent_color" in refused(accent_color=colour), colour
    for logo in ("http://cdn.example.com/logo.png", "javascript:alert(1)", "data:image/png;base64,AAAA"):
        assert "logo_url" in refused(logo_url=logo), logo
    for language in ('en"><b>', "e", "english language"):
        assert "language" in refused(language=language), language


def test_good_settings_pass_and_a_reserved_title_gets_a_handle_of_its_own():
    account = AccountFactory()
    ChannelFactory.build(
        account=account,
        team=None,
        handle="my-notes",
        domain="notes.example.com",
        time_zone="Europe/Berlin",
        accent_color="#AA3300",
        logo_url="https://cdn.example.com/logo.png",
        language="pt-BR",
    ).full_clean()

    channel = ChannelFactory(account=account, team=None, title="Preview")

    assert channel.handle == "preview-blog"
    assert ChannelFactory(account=account, team=None, title="Preview").handle == "preview-blog-2"
