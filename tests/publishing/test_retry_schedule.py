"""The one retry policy every outbox keeps to (apps.core.outbox.retry_delay)."""

from apps.core.outbox import retry_delay

SCHEDULE = [10, 60, 300]


def test_each_failure_waits_its_delay_of_the_schedule_then_gives_up():
    assert [retry_delay(failed, SCHEDULE) for failed in (1, 2, 3, 4)] == [10, 60, 300, None]


def test_a_longer_pause_the_other_side_asked_for_wins():
    assert retry_delay(1, SCHEDULE, at_least=120) == 120
    assert retry_delay(2, SCHEDULE, at_least=5) == 60


def test_a_capped_schedule_keeps_to_its_last_delay_and_never_gives_up():
    assert [retry_delay(failed, SCHEDULE, capped=True) for failed in (1, 3, 4, 40)] == [10, 300, 300, 300]


def test_an_empty_schedule_gives_up_at_once():
    assert retry_delay(1, []) is None
