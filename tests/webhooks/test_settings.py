"""The delivery knobs come from the environment; bad values stop the start-up."""

import json
import subprocess

import pytest

from tests.conftest import settings_loaded

SHOW = (
    "import json, config.settings as s; print(json.dumps([s.WEBHOOK_DISABLE_AFTER.total_seconds(), "
    "s.WEBHOOK_BREAKER_THRESHOLD, s.WEBHOOK_SENDERS, s.WEBHOOK_ENDPOINT_CONCURRENCY, "
    "s.WEBHOOK_MAX_AGE.total_seconds(), s.WEBHOOK_BATCH_SIZE, s.WEBHOOK_BREAKER_PROBE_DELAYS]))"
)


def load(**env) -> subprocess.CompletedProcess:
    return settings_loaded(SHOW, env, unset=("WEBHOOK_", "DJANGO_"))


def test_defaults_hold_an_endpoint_back_after_5_failures_keep_its_deliveries_3_days_and_disable_it_after_5():
    result = load()
    assert result.returncode == 0, result.stderr
    # A task carries 100 deliveries: at 50 a batch's fixed costs were a sixth of a worker's CPU.
    assert json.loads(result.stdout) == [5 * 24 * 3600, 5, 16, 2, 3 * 24 * 3600, 100, [60, 300, 1800, 7200]]


def test_the_breakers_probe_delays_are_read_as_seconds():
    result = load(WEBHOOK_BREAKER_PROBE_DELAYS="5,30")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)[-1] == [5, 30]


@pytest.mark.parametrize(
    ("value", "seconds"), [("3600", 3600), ("P2D", 2 * 24 * 3600), ("PT90M", 5400), ("1 00:00:00", 86400)]
)
def test_the_disable_window_is_read_in_seconds_or_iso_8601(value, seconds):
    result = load(WEBHOOK_DISABLE_AFTER=value)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)[0] == seconds


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("WEBHOOK_DISABLE_AFTER", "five days"),
        ("WEBHOOK_DISABLE_AFTER", "0"),
        ("WEBHOOK_MAX_AGE", "three days"),
        ("WEBHOOK_BREAKER_THRESHOLD", "0"),
        ("WEBHOOK_SENDERS", "many"),
        ("WEBHOOK_ENDPOINT_CONCURRENCY", "-1"),
        ("WEBHOOK_BREAKER_PROBE_DELAYS", "a minute"),
        ("WEBHOOK_BREAKER_PROBE_DELAYS", "60,-300"),
        ("WEBHOOK_BREAKER_PROBE_DELAYS", ""),
    ],
)
def test_bad_values_stop_the_start_up(name, value):
    result = load(**{name: value})
    assert result.returncode != 0
    assert name in result.stderr
