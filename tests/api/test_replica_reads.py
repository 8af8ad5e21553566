"""Reads on a real streaming replica: searches served by it, their writes on the primary, the writer when it lags or dies.

A primary of its own (a temporary embedded PostgreSQL on a free port) and a physical replica of it made with
``pg_basebackup`` (``rag_local.replica``); the query function reads through ``RAG_DATABASE_READER_URL``.
Pausing the replica's replay (``pg_wal_replay_pause``) makes what it serves visibly older than the primary.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import psycopg
import pytest
from moto import mock_aws

from rag_local.replica import ReplicatedServers, replicated_servers, wait_for_replay
from tests.api.conftest import call

BUCKET = "replica-test"
KAYAK = ("tenants/acme/projects/boats/2026-11-02-kayaks.txt", "Zoe: The quarterly kayak budget was approved.\nBen: Good.")
WALRUS = ("tenants/acme/projects/boats/2026-11-09-walrus.txt", "Ben: The walrus migration plan needs three more weeks.")
OTTER = ("tenants/acme/projects/ships/2026-11-20-otter.txt", "Cy: The otter hull repair is finished and signed off.")
PELICAN = ("tenants/acme/projects/boats/2026-11-16-pelican.txt", "Ann: The pelican survey starts on Monday at the pier.")


def _set_env(**values: str) -> None:
    from rag.config import get_settings

    os.environ.update(values)
    get_settings.cache_clear()


def ingest(key: str, text: str) -> str:
    """The real ingest path (moto S3) writing one transcript to the primary; its document id."""
    from rag.aws import _client
    from rag.config import get_settings
    from rag.events import ObjectChange
    from rag.ingest import build_ingestor

    with mock_aws():
        _client.cache_clear()
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        s3.put_object(Bucket=BUCKET, Key=key, Body=text.encode())
        result = build_ingestor(get_settings()).apply(ObjectChange("created", BUCKET, key))
        _client.cache_clear()
    assert result.outcome == "ingested", result
    return str(result.document_id)


@pytest.fixture(scope="module")
def servers(local_embedder: Any) -> Iterator[ReplicatedServers]:
    from rag.config import Settings, get_settings
    from rag.store.connection import close_pool
    from rag.store.replica import close_reader_pool

    saved = dict(os.environ)
    with replicated_servers(Settings()) as servers:
        _set_env(
            DATABASE_URL=servers.primary_url, RAG_DATABASE_READER_URL=servers.replica_url,
            RAG_QUERY_LOG_FLUSH_SECONDS="0", RAG_DATABASE_READER_RECHECK_SECONDS="0.05",
        )  # fmt: skip
        ingest(*KAYAK)
        wait_for_replay(servers.primary_url, servers.replica_url)
        try:
            yield servers
        finally:
            close_reader_pool()
            close_pool()
            os.environ.clear()
            os.environ.update(saved)
            get_settings.cache_clear()


@pytest.fixture(autouse=True)
def fresh_reader_health(servers: ReplicatedServers) -> Iterator[None]:
    """Each test starts with no lag measured and no failure remembered, and leaves replay running."""
    from rag.store.replica import close_reader_pool, take_reader_fallbacks

    close_reader_pool()
    take_reader_fallbacks()
    yield
    with psycopg.connect(servers.replica_url, autocommit=True) as replica:
        if replica.execute("SELECT pg_is_wal_replay_paused()").fetchone() == (True,):
            replica.execute("SELECT pg_wal_replay_resume()")


def search_contents(query: str, mode: str = "hybrid") -> list[str]:
    status, body = call("POST", "/v1/search", {"query": query, "mode": mode, "top_k": 5, "threshold": 0.3})
    assert status == 200, body
    return [result["content"] for result in body["results"]]


def count(url: str, sql: str, *params: Any) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(sql, params).fetchone()
    return int(row[0]) if row else 0


def test_searches_read_the_replica_and_their_writes_land_on_the_primary(servers: ReplicatedServers) -> None:
    _set_env(RAG_DATABASE_READER_MAX_LAG_SECONDS="3600")  # the paused replica stays in use
    with psycopg.connect(servers.replica_url, autocommit=True) as replica:
        replica.execute("SELECT pg_wal_replay_pause()")
    walrus_id = ingest(*WALRUS)  # on the primary only, while the replica replays nothing

    assert any("kayak" in text for text in search_contents("kayak budget"))
    assert not any("walrus" in text for text in search_contents("walrus migration plan"))  # the replica's view

    # Read-your-writes: the document's status comes from the writer, though the replica has not seen it.
    status, document = call("GET", f"/v1/documents/{walrus_id}")
    assert status == 200 and document["id"] == walrus_id, document  # the replica would answer 404
    # The search's writes went to the primary: its query-log row and its cached query vector.
    logged = "SELECT count(*) FROM query_log WHERE query = %s"
    assert count(servers.primary_url, logged, "walrus migration plan") == 1
    cached = "SELECT count(*) FROM query_embedding_cache WHERE query = %s"
    assert count(servers.primary_url, cached, "walrus migration plan") == 1
    assert count(servers.replica_url, logged, "walrus migration plan") == 0
    readers = "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'meeting-rag-reader'"
    assert count(servers.replica_url, readers) >= 1 and count(servers.primary_url, readers) == 0

    with psycopg.connect(servers.replica_url, autocommit=True) as replica:
        replica.execute("SELECT pg_wal_replay_resume()")
    wait_for_replay(servers.primary_url, servers.replica_url)
    assert any("walrus" in text for text in search_contents("walrus migration plan"))


def test_ask_reads_the_replica_logs_on_the_primary_and_knows_a_project_created_a_moment_ago(
    servers: ReplicatedServers,
) -> None:
    from rag.ask.extractive import NOT_FOUND

    _set_env(RAG_DATABASE_READER_MAX_LAG_SECONDS="3600", RAG_LLM_PROVIDER="none")
    with psycopg.connect(servers.replica_url, autocommit=True) as replica:
        replica.execute("SELECT pg_wal_replay_pause()")
    ingest(*OTTER)  # project "ships" exists on the primary only
    question = "Is the otter hull repair finished?"

    status, body = call("POST", "/v1/ask", {"question": question, "project_ids": ["ships"]})

    assert status == 200, body  # not 404: the writer was asked about the project the replica does not know
    assert body["answer"] == NOT_FOUND  # the replica's view: no transcript in "ships" yet
    assert call("POST", "/v1/ask", {"question": question, "project_ids": ["nowhere"]})[0] == 404
    logged = "SELECT count(*) FROM query_log WHERE mode = 'ask' AND query = %s"
    assert count(servers.primary_url, logged, question) == 1

    with psycopg.connect(servers.replica_url, autocommit=True) as replica:
        replica.execute("SELECT pg_wal_replay_resume()")
    wait_for_replay(servers.primary_url, servers.replica_url)
    status, body = call("POST", "/v1/ask", {"question": question, "project_ids": ["ships"]})
    assert status == 200 and "otter" in body["answer"].lower(), body
    assert count(servers.primary_url, logged, question) == 2


def test_a_replica_lagging_past_the_bound_sends_reads_to_the_writer(servers: ReplicatedServers) -> None:
    import time

    from rag.store import replica as replica_module

    _set_env(RAG_DATABASE_READER_MAX_LAG_SECONDS="1")
    with psycopg.connect(servers.replica_url, autocommit=True) as replica:
        replica.execute("SELECT pg_wal_replay_pause()")
        ingest(*PELICAN)
        for _ in range(100):  # until the replica is more than the bound behind (its last replayed commit ages)
            lag = replica_module.measure_lag(replica)
            if lag is not None and lag > 1.5:
                break
            time.sleep(0.05)
        assert lag is not None and lag > 1.5, lag

        assert any("pelican" in text for text in search_contents("pelican survey"))  # the writer's view
        assert replica_module.health.lag_seconds is not None and replica_module.health.lag_seconds > 1

        replica.execute("SELECT pg_wal_replay_resume()")
    wait_for_replay(servers.primary_url, servers.replica_url)
    time.sleep(0.1)  # past the recheck interval (0.05 s): the next read measures again
    assert any("pelican" in text for text in search_contents("pelican survey"))
    health = replica_module.health  # measured again: within the bound, the replica is read from again
    assert health.lag_seconds is not None and health.lag_seconds < 1 and not health.avoided(time.monotonic())


def test_stopping_the_replica_under_parallel_searches_fails_no_search(servers: ReplicatedServers, local_embedder: Any) -> None:
    from rag.config import get_settings
    from rag.search.engine import SearchScope
    from rag.search.service import SearchQuery, run_search
    from rag.store.replica import Connections, take_reader_fallbacks

    settings = get_settings()
    served: list[int] = []
    some_done, stopped = threading.Event(), threading.Event()

    def one_search(number: int) -> list[str]:
        if number >= 20:  # the later third start only once the replica is down: they must not all finish before it
            assert stopped.wait(60)
        query = SearchQuery("kayak budget", SearchScope(tenant_id="acme"), ("chunk",), "hybrid", 5)
        connections = Connections(settings)  # what one API request holds (rag.api.request_scope)

        def work(conn: psycopg.Connection, writer: Any) -> list[str]:
            served.append(conn.info.port)
            ranked, _ = run_search(conn, local_embedder, settings, query, writer)
            return [hit.content for _, hit in ranked]

        try:
            return connections.read(work)
        finally:
            connections.release()
            if number >= 8:
                some_done.set()

    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            futures = [pool.submit(one_search, n) for n in range(60)]
            assert some_done.wait(60)
            servers.stop_replica("immediate")  # as a crash or a failover does: connections cut mid-query
            stopped.set()
            results = [future.result() for future in futures]  # any failed search raises here
    finally:
        servers.start_replica()
    assert all(any("kayak" in text for text in contents) for contents in results)
    assert served.count(servers.replica_port) >= 1, served
    assert served[-1] == servers.primary_port and served.count(servers.primary_port) >= 10, served
    assert take_reader_fallbacks() == served.count(servers.primary_port)  # the query function's ReaderFallbacks


def test_a_read_cut_off_by_the_replica_stopping_runs_again_on_the_writer(servers: ReplicatedServers) -> None:
    import time

    from rag.config import get_settings
    from rag.store.replica import Connections

    served: list[int] = []

    def work(conn: psycopg.Connection, writer: Any) -> int:
        served.append(conn.info.port)
        row = conn.execute("SELECT count(*) FROM documents, pg_sleep(%s)", (5 if writer else 0,)).fetchone()
        return int(row[0]) if row else -1

    connections = Connections(get_settings())
    with ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(connections.read, work)
        in_flight = "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%%pg_sleep%%'"
        for _ in range(500):  # until the replica is executing the read
            if reached := count(servers.replica_url, in_flight) >= 1:
                break
            time.sleep(0.02)
        try:
            assert reached, f"the read never reached the replica: {served}"
            servers.stop_replica("immediate")
            documents = future.result()
        finally:
            connections.release()
            servers.start_replica()
    assert served == [servers.replica_port, servers.primary_port], (servers.replica_pgdata / "server.log").read_text()[-3000:]
    assert documents == count(servers.primary_url, "SELECT count(*) FROM documents") >= 1


def test_an_unreachable_reader_sends_reads_to_the_writer_and_counts_them(
    servers: ReplicatedServers, closed_database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from rag.store import replica as replica_module

    _set_env(RAG_DATABASE_READER_URL=closed_database_url, RAG_DATABASE_READER_RECHECK_SECONDS="60")
    try:
        assert any("kayak" in text for text in search_contents("kayak budget"))
        assert replica_module.health.down
        assert any("kayak" in text for text in search_contents("kayak budget"))  # the writer, the reader left alone
        metrics = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
        assert [m.get("ReaderFallbacks") for m in metrics if "ReaderFallbacks" in m] == [[1.0], [1.0]]
    finally:
        _set_env(RAG_DATABASE_READER_URL=servers.replica_url, RAG_DATABASE_READER_RECHECK_SECONDS="0.05")
