"""A blog as its readers see it: the pages of a live server in headless Chromium (Debian's chromium
package, driven by Playwright). Set BLOG_SCREENSHOTS=<folder> to keep screenshots of the pages."""

import os
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from tests.conftest import needs_chromium
from tests.factories import ChannelFactory, MediaFactory, PostFactory, TagFactory

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    needs_chromium,
]

LONG_WORD = "Donaudampfschifffahrtselektrizitätenhauptbetriebswerkbauunterbeamtengesellschaft" * 2
LONG_URL = "https://example.com/" + "a-very-long-path-segment-without-spaces-" * 6 + "end"
WIDE_CODE = "result = " + " + ".join(f"compute_the_value_of_item_{n}(argument)" for n in range(12))
RICH_BODY = f"""An opening paragraph with `inline code`, **bold** and a [link](https://example.com/).

## A table that is wider than a phone

| Column | Another column | A third one | A fourth with longer text | Fifth | Sixth | Seventh |
|:-------|:--------------:|------------:|---------------------------|-------|-------|---------|
| 1 | two | three | four words of text | 5 | 6 | seven |
| eins | zwei | drei | vier Wörter im Text | fünf | sechs | sieben |

## Code that does not wrap

```python
{WIDE_CODE}
print(result)
```

> A quotation, to show how one looks.

The word {LONG_WORD} has no place to break, nor has this address: {LONG_URL}.

![The blog's icon, in the body]({{image}})

- a list item
- another one[^1]

[^1]: A footnote.
"""


def seed_blog(image_url: str):
    """A blog of five published posts with tags, a draft, and one post with everything a body can
    hold (a table, a code block, an image, words too long for a line) and an image attached."""
    channel = ChannelFactory(
        title="Field Notes",
        description="Notes from the field, on software and the web.",
        accent_color="#0f766e",
        time_zone="Europe/Berlin",
    )
    python, web = (TagFactory(account=channel.account, name=name) for name in ("python", "web"))
    now = timezone.now()
    for n in range(4):
        PostFactory(
            channel=channel,
            title=f"Short post number {n}",
            slug=f"short-{n}",
            publication_status="published",
            published_at=now - timedelta(days=10 - n),
            tags=[web] if n % 2 else [],
        )
    PostFactory(channel=channel, title="A draft nobody sees", slug="draft")
    rich = PostFactory(
        channel=channel,
        title="Everything a post can hold, and a title long enough to wrap on a phone",
        slug="everything",
        teaser="A post with a table, a code block, an image and words that are too long for any line.",
        body=RICH_BODY.replace("{image}", image_url),
        publication_status="published",
        published_at=now - timedelta(hours=1),
        tags=[python, web],
    )
    MediaFactory(post=rich, url=image_url, alt_text="The blog's icon, attached", width=64, height=64)
    return channel, rich


class Watched:
    """What went wrong in the browser while a page was open: console errors (a blocked style or
    image is one: the Content-Security-Policy reports there), uncaught errors, failed responses."""

    def __init__(self, page) -> None:
        self.problems: list[str] = []
        page.on("console", lambda message: message.type == "error" and self.problems.append(message.text))
        page.on("pageerror", lambda error: self.problems.append(str(error)))
        page.on("response", lambda response: response.status >= 400 and self.problems.append(response.url))
        page.on("requestfailed", lambda request: self.problems.append(f"{request.url}: {request.failure}"))


def overflow(page) -> int:
    """How many pixels the page is wider than the window (a reader would scroll sideways)."""
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


def background(page) -> str:
    return page.evaluate("getComputedStyle(document.body).backgroundColor")


def screenshot(page, name: str) -> None:
    folder = os.environ.get("BLOG_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=f"{folder}/{name}.png", full_page=True)


def test_a_reader_follows_the_index_to_a_post_to_a_tag_and_finds_the_feed_without_a_browser_error(
    browser, live_server, settings
):
    settings.SITE_URL = live_server.url
    settings.BLOG_PAGE_SIZE = 4
    channel, rich = seed_blog(f"{live_server.url}/static/blog/icon.svg")
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    watched = Watched(page)

    page.goto(channel.public_url())
    assert page.title() == "Field Notes"
    titles = page.locator("article.summary h2").all_inner_texts()
    assert titles == [rich.title, "Short post number 3", "Short post number 2", "Short post number 1"]
    assert "A draft nobody sees" not in page.content()

    feed = page.locator('head link[rel=alternate][type="application/atom+xml"]').get_attribute("href")
    answer = page.request.get(feed)
    assert answer.status == 200
    assert answer.headers["content-type"].startswith("application/atom+xml")
    assert rich.title in answer.text()

    page.click("a[rel=next]")
    page.wait_for_url("**?before=*")
    assert page.locator("article.summary h2").all_inner_texts() == ["Short post number 0"]
    page.click("a[rel=prev]")
    page.wait_for_url("**?after=*")
    assert page.locator("article.summary h2").all_inner_texts() == titles

    page.click(f"article.summary h2 a:text('{rich.title}')")
    page.wait_for_url(channel.post_url("everything"))
    assert page.locator("main h1").inner_text().startswith(rich.title)
    images = page.locator("main img")
    assert images.count() == 2
    for n in range(images.count()):
        images.nth(n).scroll_into_view_if_needed()
        images.nth(n).evaluate("img => img.decode()")  # loaded (lazily) and shown, or this throws

    page.click("ul.tags a:text('python')")
    page.wait_for_url(channel.public_url("blog:tag", tag="python"))
    assert page.locator("main h1").inner_text() == "Posts tagged “python”"
    assert page.locator("article.summary h2").all_inner_texts() == [rich.title]

    page.goto(channel.post_url("draft"))
    assert page.locator("main h1").inner_text() == "Page not found"
    with page.expect_response(channel.public_url()) as revisit:
        page.click("main a:text('latest posts')")
    page.wait_for_url(channel.public_url())
    # The browser asked again with the page's validator, and the answer (a 304) kept the stored page.
    assert revisit.value.request.header_value("if-none-match") == revisit.value.header_value("etag")

    # The draft's 404 is the one failed response a reader meets (the console says so too); nothing
    # else may fail (the index after the 304 too: the stored page kept its own policy).
    draft_404 = [
        channel.post_url("draft"),
        "Failed to load resource: the server responded with a status of 404 (Not Found)",
    ]
    assert watched.problems == draft_404, "\n".join(watched.problems)


def test_the_pages_fit_a_phone_and_a_wide_screen_in_light_and_dark(browser, live_server, settings):
    settings.SITE_URL = live_server.url
    channel, rich = seed_blog(f"{live_server.url}/static/blog/icon.svg")
    page = browser.new_page()
    watched = Watched(page)
    backgrounds = {}
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        for width, height in ((375, 800), (1400, 900)):
            page.set_viewport_size({"width": width, "height": height})
            for name, url in (("index", channel.public_url()), ("post", channel.post_url(rich.slug))):
                # Every request of the page ends before the next page is asked for: a navigation
                # cancels what is still loading (net::ERR_ABORTED), which is no fault of the page.
                page.goto(url, wait_until="networkidle")
                assert overflow(page) <= 0, f"{name} at {width} px scrolls sideways"
                column = page.locator("main").evaluate("main => main.getBoundingClientRect().width")
                if width == 1400:
                    assert 500 <= column <= 900, f"{name}'s text column is {column} px wide at {width} px"
                else:
                    assert column >= 300, f"{name}'s text column is {column} px wide at {width} px"
                if name == "post":
                    # The code block and table too wide for a phone scroll within the column, not the page.
                    for selector in ("main pre", "main table"):
                        scrolled, shown = page.locator(selector).evaluate("e => [e.scrollWidth, e.clientWidth]")
                        assert shown <= column, f"{selector} is wider than the column at {width} px"
                        assert width > 375 or scrolled > shown, f"{selector} does not scroll at {width} px"
                screenshot(page, f"{name}-{width}-{scheme}")
            backgrounds[scheme] = background(page)
    assert backgrounds["light"] != backgrounds["dark"]
    assert watched.problems == [], "\n".join(watched.problems)
