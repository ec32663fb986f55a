"""Every installed destination kind reaches the rest of the service through the registry alone
(apps/core/destinations.py), with nothing written for it outside its package: the API's platform
values and the OpenAPI enum, the Settings area's channel form and channel page, a story sent to a
channel of the kind, the calendar, and the docs. Parametrized over the registry, so a kind added
tomorrow is held to the same."""

import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from apps.core.destinations import kinds
from apps.posts.models import Post
from apps.posts.writing import Writer
from apps.stories.services import ChannelChoice, story_create
from tests.conftest import admin_session
from tests.factories import AdminUserFactory, ApiKeyFactory, ChannelFactory

pytestmark = pytest.mark.django_db

DOCS = Path(__file__).resolve().parents[2] / "docs"
KINDS = sorted(kind.platform for kind in kinds())


@pytest.fixture(params=KINDS)
def kind(request):
    return next(kind for kind in kinds() if kind.platform == request.param)


@pytest.fixture
def admin():
    return AdminUserFactory()


def test_the_openapi_enum_and_the_api_name_the_kinds_platform(client, kind, admin):
    schema = client.get("/v1/openapi.json").json()
    assert kind.platform in schema["components"]["schemas"]["PlatformEnum"]["enum"]
    channel = ChannelFactory(account=admin.account, platform=kind.platform)
    key = ApiKeyFactory(user=admin)
    answer = client.get(f"/v1/channels/{channel.pk}", HTTP_AUTHORIZATION=f"Bearer {key.raw}")
    assert answer.status_code == 200
    assert answer.json()["data"]["platform"] == kind.platform


def test_the_settings_areas_channel_form_offers_the_kind_and_its_page_says_what_to_set_up(kind, admin):
    session = admin_session(admin)
    form = session.get("/admin/channels/channel/add/").content.decode()
    assert re.search(rf'<option value="{kind.platform}"[^>]*>{re.escape(kind.label)}</option>', form)
    channel = ChannelFactory(account=admin.account, platform=kind.platform, title="Where it goes")
    page = session.get(f"/admin/channels/channel/{channel.pk}/change/")
    assert page.status_code == 200
    assert "Where it goes" in page.content.decode()


def test_a_story_sent_to_a_channel_of_the_kind_is_on_the_calendar_with_the_kinds_name(kind, admin):
    channel = ChannelFactory(account=admin.account, platform=kind.platform, title="Out there")
    story = story_create(
        account_id=admin.account_id,
        writer=Writer(may_publish=True),
        title="Harbour news",
        channels=[ChannelChoice(channel.pk)],
        publication_status="scheduled",
        scheduled_at=timezone.now() + timedelta(days=1),
    )
    assert Post.objects.get(story_link__story=story).channel == channel
    session = admin_session(admin)
    assert session.get(f"/admin/stories/story/{story.pk}/change/").status_code == 200
    calendar = session.get("/admin/calendar/", {"date": f"{timezone.now() + timedelta(days=1):%Y-%m-%d}"})
    assert f"Out there ({kind.platform})" in calendar.content.decode()


def test_the_docs_describe_the_kind(kind):
    written = "\n".join(path.read_text() for path in DOCS.glob("*.md"))
    assert re.search(rf"^#+ .*{re.escape(kind.label)}", written, re.M | re.I), f"no heading names {kind.label} in docs/"
    assert f"`{kind.platform}`" in written
