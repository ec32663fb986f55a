"""Attempts to one URL in a row share one look-up of its keep-alive pool (transport._route); the
pool manager may let go of a pool meanwhile, which must not fail an attempt."""

import pytest

from apps.core.addresses import pool_manager
from apps.webhooks import transport
from tests.receiver import Receiver


@pytest.fixture
def second_receiver():
    server = Receiver().start()
    yield server
    server.stop()


def _send(url: str, delivery_id: str) -> transport.Outcome:
    return transport.send(url=url, secret="whsec_test", body=b"{}", event="post.published", delivery_id=delivery_id)


def test_attempts_in_a_row_to_one_url_reach_it_each_with_its_own_path(receiver, private_targets):
    receiver.url = receiver.url + "?source=cps"
    outcomes = [_send(receiver.url, f"d-{n}") for n in range(3)]
    assert [outcome.status for outcome in outcomes] == [200, 200, 200]
    requests = receiver.wait_for(3)
    assert [request.path for request in requests] == ["/hook?source=cps"] * 3
    assert [request.headers["X-Service-Delivery"] for request in requests] == ["d-0", "d-1", "d-2"]


def test_attempts_that_alternate_between_urls_each_reach_their_own(receiver, second_receiver, private_targets):
    for n in range(2):
        assert _send(receiver.url, f"first-{n}").status == 200
        assert _send(second_receiver.url, f"second-{n}").status == 200
    assert [r.headers["X-Service-Delivery"] for r in receiver.wait_for(2)] == ["first-0", "first-1"]
    assert [r.headers["X-Service-Delivery"] for r in second_receiver.wait_for(2)] == ["second-0", "second-1"]


def test_an_attempt_after_the_pool_manager_closed_its_pools_still_goes_out(receiver, private_targets):
    assert _send(receiver.url, "before").status == 200
    # The manager lets go of its pools (as of the least recently used when it has more than it keeps).
    pool_manager().clear()
    outcome = _send(receiver.url, "after")
    assert (outcome.status, outcome.error) == (200, "")
    assert [r.headers["X-Service-Delivery"] for r in receiver.wait_for(2)] == ["before", "after"]
