"""The settings a newcomer can read (issue 54): config/settings/ one module per concern, read with
apps/core/env.py's typed readers, and a destination kind's settings declared by its own package."""

import re
from datetime import timedelta
from pathlib import Path
from types import ModuleType

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from apps.core import env
from apps.publishing.git import conf as git_conf
from apps.publishing.linkedin import conf as linkedin_conf
from apps.publishing.newsletter import conf as newsletter_conf
from config.settings import _add

CONFIG = Path(__file__).resolve().parents[2] / "config"
KINDS = re.compile(r"\b(git|linkedin|newsletter)\b", re.IGNORECASE)


def declared(module: ModuleType) -> dict:
    return {name: value for name, value in vars(module).items() if name.isupper()}


@pytest.mark.parametrize("conf", [git_conf, linkedin_conf, newsletter_conf], ids=lambda conf: conf.__name__)
def test_a_destination_kinds_settings_are_declared_by_its_package_and_read_as_any_setting(conf):
    names = declared(conf)
    assert names
    for name, value in names.items():
        if name != "CELERY_BEAT_SCHEDULE":
            assert getattr(settings, name) == value, name
    settings_sources = "\n".join(path.read_text() for path in (CONFIG / "settings").glob("*.py"))
    assert [name for name in names if name != "CELERY_BEAT_SCHEDULE" and name in settings_sources] == []


def test_a_packages_beat_entries_join_the_one_schedule():
    assert settings.CELERY_BEAT_SCHEDULE["publishing.linkedin_expiry"]["schedule"] == 86400.0
    assert settings.CELERY_BEAT_SCHEDULE["publishing.sweep"]["task"] == "publishing.sweep"


def test_override_settings_reaches_a_kinds_settings(tmp_path):
    with override_settings(GIT_CACHE_DIR=tmp_path, NEWSLETTER_SEND_RATE=0):
        overridden = (settings.GIT_CACHE_DIR, settings.NEWSLETTER_SEND_RATE)
    assert overridden == (tmp_path, 0)
    assert settings.GIT_CACHE_DIR == git_conf.GIT_CACHE_DIR


def test_a_setting_declared_twice_stops_the_start_up():
    loaded: dict = {}
    first, second = ModuleType("first"), ModuleType("second")
    first.PAGE = 1
    second.PAGE = 2
    _add(first, loaded)
    with pytest.raises(ImproperlyConfigured, match="PAGE is set twice: by second"):
        _add(second, loaded)


def test_config_names_no_destination_kind_but_in_installed_apps():
    """config/urls.py is left out: the URLs' own part of issue 54 moves the newsletter's."""
    named = [
        f"{path.relative_to(CONFIG)}:{number}: {line.strip()}"
        for path in sorted(CONFIG.rglob("*.py"))
        if path.name != "urls.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if KINDS.search(line) and not re.fullmatch(r'\s*"apps\.publishing\.\w+",', line)
    ]
    assert named == []


@pytest.mark.parametrize(
    ("read", "written", "value"),
    [
        (lambda: env.boolean("X", default=False), "On", True),
        (lambda: env.boolean("X", default=True), "no", False),
        (lambda: env.positive_int("X", 5), "7", 7),
        (lambda: env.non_negative_int("X", 5), "0", 0),
        (lambda: env.int_between("X", 5, 1, 10), "10", 10),
        (lambda: env.int_list("X", "1"), "60, 300,", [60, 300]),
        (lambda: env.duration("X", "P1D"), "PT90M", timedelta(minutes=90)),
        (lambda: env.duration("X", "P1D"), "30", timedelta(seconds=30)),
        (lambda: env.limit("X", "10"), "", None),
        (lambda: env.rate("X", "1/s"), "10/h", (10, 3600)),
        (lambda: env.base_url("X", "https://a.example"), "http://127.0.0.1:81/api/", "http://127.0.0.1:81/api"),
        (lambda: env.database("X", "sqlite:////tmp/a.db")["NAME"], "postgres://u@db:5432/cps", "cps"),
        (lambda: env.database("X", "sqlite:////tmp/a.db")["NAME"], "", "/tmp/a.db"),
    ],
)
def test_each_reader_takes_its_kind_of_value(monkeypatch, read, written, value):
    monkeypatch.setenv("X", written)
    assert read() == value


@pytest.mark.parametrize(
    ("read", "written", "message"),
    [
        (lambda: env.boolean("X", default=False), "maybe", "X must be true or false, got 'maybe'"),
        (lambda: env.positive_int("X", 5), "0", "X must be a positive integer, got 0"),
        (lambda: env.non_negative_int("X", 5), "-1", "X must not be negative, got -1"),
        (lambda: env.int_between("X", 5, 1, 10), "11", "X must be between 1 and 10, got 11"),
        (lambda: env.int_list("X", "1"), "1,a", "X must be comma-separated integers"),
        (lambda: env.int_list("X", "1"), "1,-2", "X must not contain negative numbers"),
        (lambda: env.int_list("X", "1", at_least_one=True), "", "X must name at least one"),
        (lambda: env.duration("X", "P1D"), "soon", "X must be a positive duration"),
        (lambda: env.limit("X", "10"), "0", "X must be a positive integer or empty (no limit)"),
        (lambda: env.rate("X", "1/s"), "10/week", "X must be a count per unit, like 10/h"),
        (lambda: env.base_url("X", "https://a.example"), "ftp://a.example", "X must be an http(s) address"),
        (lambda: env.one_of("X", "b", {"a"}, "a or nothing"), "", "X must be a or nothing, got 'b'"),
    ],
)
def test_a_value_a_reader_cannot_take_stops_the_start_up_naming_the_variable(monkeypatch, read, written, message):
    monkeypatch.setenv("X", written)
    with pytest.raises(ImproperlyConfigured, match=re.escape(message)):
        read()
