"""What a process remembers of its reader: a lag past the bound or a failure keeps reads off it for a while."""

from __future__ import annotations

from rag.store.replica import ReaderHealth, measure_lag


def test_a_lag_past_the_bound_avoids_the_reader_until_the_recheck() -> None:
    health = ReaderHealth()
    assert health.needs_measuring(100.0, recheck_seconds=5) and not health.avoided(100.0)

    health.record_lag(7.5, 100.0, max_lag_seconds=5, recheck_seconds=5)

    assert health.avoided(104.9) and not health.avoided(105.0)
    assert not health.needs_measuring(104.9, recheck_seconds=5) and health.needs_measuring(105.0, recheck_seconds=5)


def test_a_lag_within_the_bound_or_unknown_keeps_the_reader() -> None:
    health = ReaderHealth()
    health.record_lag(4.9, 100.0, max_lag_seconds=5, recheck_seconds=5)
    assert not health.avoided(100.0)
    health.record_lag(None, 200.0, max_lag_seconds=5, recheck_seconds=5)  # nothing known (Aurora may say NULL)
    assert not health.avoided(200.0) and health.lag_seconds is None


def test_a_failure_avoids_the_reader_and_asks_for_a_new_measurement_when_it_is_tried_again() -> None:
    health = ReaderHealth()
    health.record_lag(0.0, 100.0, max_lag_seconds=5, recheck_seconds=5)

    health.failed(101.0, recheck_seconds=5)

    assert health.down and health.avoided(105.9) and not health.avoided(106.0)
    assert health.needs_measuring(106.0, recheck_seconds=5)


def test_a_server_that_is_not_a_replica_has_no_lag(db: object) -> None:
    assert measure_lag(db) == 0.0  # type: ignore[arg-type]  # the session's database: a primary
