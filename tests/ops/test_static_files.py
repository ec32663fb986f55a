"""Static files: the release step collects them, and a web process started without it still answers
every page (with the plain file names, served from the apps' folders) instead of a 500."""

import re

import pytest
from django.conf import settings as django_settings

pytestmark = pytest.mark.django_db

PRODUCTION_STORAGE = django_settings.STORAGES["staticfiles"]


@pytest.fixture
def never_collected(settings, tmp_path):
    settings.STORAGES = {**settings.STORAGES, "staticfiles": PRODUCTION_STORAGE}
    settings.STATIC_ROOT = tmp_path / "staticfiles"  # empty: collectstatic never ran


@pytest.mark.parametrize("page", ["/admin/login/", "/v1/docs"])
def test_pages_and_their_assets_answer_before_collectstatic(never_collected, client, page):
    response = client.get(page)
    assert response.status_code == 200
    assets = re.findall(r'(?:src|href)="(/static/[^"]+)"', response.content.decode())
    assert assets
    for asset in assets:
        served = client.get(asset)
        assert served.status_code == 200, asset
