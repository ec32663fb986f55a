"""Every attempt's outcome is classified once, and each verdict has one set of consequences."""

import pytest

from apps.webhooks.outcomes import Outcome, Verdict


@pytest.mark.parametrize(
    ("status", "verdict"),
    [
        (200, Verdict.DELIVERED),
        (204, Verdict.DELIVERED),
        (410, Verdict.GONE),
        (301, Verdict.REFUSED),
        (400, Verdict.REFUSED),
        (404, Verdict.REFUSED),
        (500, Verdict.REFUSED),
        (503, Verdict.REFUSED),
        (None, Verdict.NO_ANSWER),  # a timeout, a refused connection or a refused address
    ],
)
def test_a_status_has_one_verdict(status, verdict):
    assert Outcome(request_headers={}, status=status).verdict is verdict


def test_only_a_2xx_delivers_only_a_410_is_gone_and_only_silence_stops_a_batch():
    statuses = {Verdict.DELIVERED: 200, Verdict.GONE: 410, Verdict.REFUSED: 500, Verdict.NO_ANSWER: None}
    outcomes = {verdict: Outcome(request_headers={}, status=status) for verdict, status in statuses.items()}
    assert [v for v, o in outcomes.items() if o.ok] == [Verdict.DELIVERED]
    assert [v for v, o in outcomes.items() if o.consequence.gone] == [Verdict.GONE]
    assert [v for v, o in outcomes.items() if not o.consequence.answered] == [Verdict.NO_ANSWER]
    # A refusal may come from a receiver that holds a rotation's previous secret; 410 is final.
    assert [v for v, o in outcomes.items() if o.consequence.re_sign] == [Verdict.REFUSED]
