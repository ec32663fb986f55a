"""The embedded default (`make run` with nothing set: SQLite and the filesystem broker) under ordinary
use: five editors save their posts in the Settings area thirty times each, at once, while the worker
delivers the webhooks of their saves (the benchmark, bench/embedded.py, runs fifty each).

The Procfile's web, worker and beat run with their default settings on a database file and broker
folder of their own (bench/embedded.py, which the benchmark drives the same way), so this runs
whatever database the rest of the suite uses. Each editor signs in and saves through the admin's
change form as a browser does (page fetched, CSRF token and fields sent back); each save of a
published post sends `post.updated` to a receiver that records the delivery ids.
"""

import json
from collections import Counter

import pytest

from bench.embedded import Outcome, run

EDITORS, SAVES = 5, 30


@pytest.fixture(scope="module")
def outcome(tmp_path_factory) -> Outcome:
    return run(tmp_path_factory.mktemp("embedded"), editors=EDITORS, saves=SAVES, wait=45)


def test_no_save_is_answered_with_an_error(outcome):
    assert outcome.saves.statuses[302] == EDITORS * SAVES, outcome.saves.failures[:5]
    assert outcome.saves.errors == 0
    assert outcome.saves.failures == []


def test_every_edit_is_stored(outcome):
    assert outcome.lost_edits == []
    expected = {str(e["post"]): f"Editor {n}'s post, save {SAVES - 1}" for n, e in enumerate(outcome.seed["editors"])}
    assert {pk: title for pk, title in outcome.report["titles"].items() if pk in expected} == expected


def test_no_process_logs_that_the_database_is_locked(outcome):
    assert outcome.locked == []


def test_every_save_is_delivered_once_under_its_own_delivery_id(outcome):
    assert outcome.undelivered == []
    assert outcome.sent_twice == []
    assert len(outcome.received) == EDITORS * SAVES
    titles = Counter(json.loads(r.body)["data"]["post"]["title"] for r in outcome.received)
    assert set(titles.values()) == {1}


def test_every_attempt_the_receiver_answered_is_recorded(outcome):
    assert outcome.unrecorded == Counter()
    assert len(outcome.report["attempts"]) == EDITORS * SAVES
    assert {status for status, attempts in outcome.report["deliveries"].values()} == {"succeeded"}
    assert all(attempts == 1 for status, attempts in outcome.report["deliveries"].values())
