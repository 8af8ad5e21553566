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


def test_a_server_that_cannot_tell_its_lag_is_read_with_no_lag_known(database_url: str) -> None:
    """An engine without the replay functions (here: a role that may not call one) gives None, not an error."""
    import uuid

    from psycopg.conninfo import make_conninfo

    from rag.store.connection import connect

    role = f"rag_no_lag_{uuid.uuid4().hex[:8]}"
    with connect(database_url, register=False) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN")
        admin.execute("REVOKE EXECUTE ON FUNCTION pg_last_wal_receive_lsn() FROM PUBLIC")
        try:
            with connect(make_conninfo(database_url, user=role), register=False) as conn:
                assert measure_lag(conn) is None
                assert conn.execute("SELECT 1").fetchone() == (1,)  # the connection is still usable
        finally:
            admin.execute("GRANT EXECUTE ON FUNCTION pg_last_wal_receive_lsn() TO PUBLIC")
            admin.execute(f"DROP ROLE {role}")
