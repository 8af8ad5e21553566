"""The connection pool: one connection per borrower, returned clean, replaced when broken, time-bounded."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import psycopg
import pytest

from rag.config import get_settings
from rag.store.connection import close_pool, connection


@pytest.fixture
def pool_settings(database_url: str) -> Iterator[object]:
    close_pool()
    yield get_settings()
    close_pool()


def test_borrowers_side_by_side_each_get_their_own_session(pool_settings):
    # GIVEN four threads that hold a connection at the same time
    holding = threading.Barrier(4, timeout=20)
    pids: list[int] = []

    def borrower() -> None:
        with connection(pool_settings) as conn:
            pids.append(conn.info.backend_pid)
            holding.wait()

    threads = [threading.Thread(target=borrower) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    # THEN no two shared a session
    assert len(pids) == 4 and len(set(pids)) == 4


def test_a_connection_left_inside_a_failed_unit_of_work_comes_back_clean(pool_settings):
    with pytest.raises(RuntimeError), connection(pool_settings) as conn:
        pid = conn.info.backend_pid
        conn.execute("BEGIN")
        conn.execute("CREATE TEMP TABLE left_behind (x int)")
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        raise RuntimeError("the request failed half way")

    with connection(pool_settings) as conn:
        assert conn.info.backend_pid == pid  # the same session, reused
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        assert conn.execute("SELECT to_regclass('pg_temp.left_behind')").fetchone() == (None,)  # rolled back


def test_a_connection_the_server_dropped_is_replaced_before_it_is_lent(pool_settings, database_url):
    with connection(pool_settings) as conn:
        dropped = conn.info.backend_pid
    # What a database restart or a failover does to an idle pooled connection.
    with psycopg.connect(database_url, autocommit=True) as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s)", (dropped,)).fetchone() == (True,)

    with connection(pool_settings) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
        assert conn.info.backend_pid != dropped


def test_every_session_is_bounded_in_time(pool_settings):
    with connection(pool_settings) as conn:
        assert conn.execute("SHOW statement_timeout").fetchone() == ("30s",)
        assert conn.execute("SHOW idle_in_transaction_session_timeout").fetchone() == ("1min",)
        with pytest.raises(psycopg.errors.QueryCanceled), conn.transaction():
            conn.execute("SET LOCAL statement_timeout = '50ms'")
            conn.execute("SELECT pg_sleep(2)")


def test_a_session_idle_inside_a_transaction_is_ended_by_the_server(database_url):
    with psycopg.connect(database_url) as conn:  # not autocommit: the first statement opens a transaction
        conn.execute("SET idle_in_transaction_session_timeout = '100ms'")
        conn.execute("SELECT 1")
        threading.Event().wait(0.5)
        with pytest.raises(psycopg.errors.IdleInTransactionSessionTimeout):
            conn.execute("SELECT 1")
