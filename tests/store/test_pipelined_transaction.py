"""pipelined_transaction: BEGIN to COMMIT in one round trip, all or nothing, the connection left ready."""

from __future__ import annotations

import psycopg
import pytest

from rag.store.connection import connect, pipelined_transaction


@pytest.fixture
def scratch(database_url: str):
    with connect(database_url) as conn:
        conn.execute("DROP TABLE IF EXISTS pipelined_scratch; CREATE TABLE pipelined_scratch (n int)")
        yield conn
        conn.execute("DROP TABLE IF EXISTS pipelined_scratch")


def syncs_sent(conn: psycopg.Connection, trace_path, work) -> int:
    """How many times the client waited for the server (Sync messages in the protocol trace) while ``work`` ran."""
    with open(trace_path, "w") as trace:
        conn.pgconn.trace(trace.fileno())
        conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS | psycopg.pq.Trace.REGRESS_MODE)
        try:
            work()
        finally:
            conn.pgconn.untrace()
    return sum(1 for line in open(trace_path) if line.split()[:1] == ["F"] and "Sync" in line)


def test_a_search_shaped_transaction_costs_one_round_trip(scratch, tmp_path):
    results = []

    def work():
        with pipelined_transaction(scratch):
            scratch.execute("SELECT set_config('hnsw.ef_search', '100', true)")
            scratch.execute("INSERT INTO pipelined_scratch VALUES (1)")
            results.append(scratch.execute("SELECT current_setting('hnsw.ef_search'), count(*) FROM pipelined_scratch"))

    assert syncs_sent(scratch, tmp_path / "trace", work) == 1
    assert results[0].fetchall() == [("100", 1)]

    def with_psycopgs_own():
        with scratch.pipeline(), scratch.transaction():
            scratch.execute("SELECT 1")

    assert syncs_sent(scratch, tmp_path / "trace2", with_psycopgs_own) >= 3  # what it replaces


def test_its_writes_are_committed_and_its_settings_end_with_it(scratch, database_url):
    with pipelined_transaction(scratch):
        scratch.execute("SELECT set_config('hnsw.ef_search', '321', true)")
        scratch.execute("INSERT INTO pipelined_scratch VALUES (1), (2)")

    with connect(database_url) as other:
        assert other.execute("SELECT count(*) FROM pipelined_scratch").fetchone() == (2,)
    assert scratch.execute("SELECT current_setting('hnsw.ef_search')").fetchone() != ("321",)
    assert scratch.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


def test_a_failing_statement_rolls_everything_back_and_leaves_the_connection_ready(scratch):
    with pytest.raises(psycopg.errors.QueryCanceled):
        with pipelined_transaction(scratch):
            scratch.execute("INSERT INTO pipelined_scratch VALUES (1)")
            scratch.execute("SELECT set_config('statement_timeout', '10ms', true)")
            scratch.execute("SELECT pg_sleep(1)")

    assert scratch.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert scratch.execute("SELECT count(*) FROM pipelined_scratch").fetchone() == (0,)


def test_an_error_raised_by_the_caller_inside_the_block_rolls_back_too(scratch):
    with pytest.raises(RuntimeError, match="caller"):
        with pipelined_transaction(scratch):
            scratch.execute("INSERT INTO pipelined_scratch VALUES (1)")
            raise RuntimeError("caller gave up")

    assert scratch.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert scratch.execute("SELECT count(*) FROM pipelined_scratch").fetchone() == (0,)


def test_a_connection_outside_autocommit_keeps_psycopgs_transaction(database_url, scratch):
    with psycopg.connect(database_url) as conn:
        with pipelined_transaction(conn):
            conn.execute("INSERT INTO pipelined_scratch VALUES (7)")
        conn.commit()
    assert scratch.execute("SELECT array_agg(n) FROM pipelined_scratch").fetchone() == ([7],)


def test_a_connection_killed_mid_transaction_raises_and_commits_nothing(database_url, scratch):
    victim = connect(database_url)
    with connect(database_url) as killer:
        with pytest.raises(psycopg.OperationalError):
            with pipelined_transaction(victim):
                victim.execute("INSERT INTO pipelined_scratch VALUES (1)")
                killer.execute("SELECT pg_terminate_backend(%s)", (victim.info.backend_pid,))
                victim.execute("SELECT pg_sleep(0.2)")

    assert victim.closed or victim.broken
    assert scratch.execute("SELECT count(*) FROM pipelined_scratch").fetchone() == (0,)
