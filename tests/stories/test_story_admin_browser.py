"""A story's page in a real browser (Chromium through Playwright), on a phone and a wide screen: the
chosen channels' sections are tabs that switch, and the LinkedIn preview's count follows the text as
one types it."""

import re

import pytest

from apps.posts.writing import Writer
from apps.stories.services import ChannelChoice, story_create
from tests.conftest import admin_session, needs_chromium
from tests.factories import AdminUserFactory, ChannelFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), needs_chromium]


@pytest.mark.parametrize("width", [375, 1400])
def test_the_channel_tabs_switch_and_the_linkedin_count_follows_the_typing(live_server, browser, width):
    from playwright import sync_api

    user = AdminUserFactory()
    blog = ChannelFactory(account=user.account, platform="blog", title="Company blog")
    social = ChannelFactory(account=user.account, platform="linkedin", title="Company LinkedIn")
    ChannelFactory(account=user.account, platform="api", title="Not chosen")
    story = story_create(
        account_id=user.account_id,
        writer=Writer(may_publish=True),
        title="Launch",
        body="We launched.",
        channels=[ChannelChoice(blog.pk), ChannelChoice(social.pk)],
    )
    context = browser.new_context(viewport={"width": width, "height": 900})
    session = admin_session(user)
    context.add_cookies([{"name": "sessionid", "value": session.cookies["sessionid"].value, "url": live_server.url}])
    page = context.new_page()
    problems = []
    page.on("console", lambda message: message.type == "error" and problems.append(message.text))
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.goto(f"{live_server.url}/admin/stories/story/{story.pk}/change/")

    tabs = page.get_by_role("tab")
    sync_api.expect(tabs.filter(visible=True)).to_have_count(2)
    blog_section = page.locator(f"#story-channel-{blog.pk}")
    social_section = page.locator(f"#story-channel-{social.pk}")
    page.get_by_role("tab", name=re.compile("Company blog")).click()
    sync_api.expect(blog_section).to_be_visible()
    sync_api.expect(social_section).to_be_hidden()

    page.get_by_role("tab", name=re.compile("Company LinkedIn")).click()
    sync_api.expect(social_section).to_be_visible()
    sync_api.expect(blog_section).to_be_hidden()
    counter = social_section.locator(".story-preview .help")
    # "Launch", a blank line, "We launched.", a blank line and the post's link on the blog.
    before = counter.inner_text()
    assert re.fullmatch(r"[\d,]+ of 3,000 characters\.", before)

    social_section.get_by_label("Commentary (posted instead of the body)").fill("Short")
    sync_api.expect(social_section.locator(".story-preview .readonly")).to_contain_text("Short")
    after = counter.inner_text()
    assert after != before
    assert int(before.split()[0].replace(",", "")) - int(after.split()[0].replace(",", "")) == len(
        "We launched."
    ) - len("Short")

    # A channel ticked on gets its tab; the section fits the screen.
    page.get_by_role("checkbox", name=re.compile("Not chosen")).check()
    sync_api.expect(tabs.filter(visible=True)).to_have_count(3)
    fits = page.locator("#story-channels").evaluate("(box) => box.scrollWidth <= box.clientWidth + 1")
    assert fits
    assert problems == []
    context.close()
