"""Reads on a streaming replica: what routing a search to it costs, and how far the replica lags.

    .venv/bin/python bench/replica_reads.py [--chunks 20000] [--queries 200] [--samples 50]

A primary of its own and a physical replica of it (``rag_local.replica``: pg_basebackup, streaming), both on this
machine (so network round trips are loopback's, far below RDS's). Three measurements:

1. Replay of a bulk load: ``--chunks`` chunks (384 d, one transaction, HNSW index rebuilt) written on the primary,
   and the seconds until the replica has replayed them.
2. Search latency as the API runs it (``rag.store.replica.Connections``: connections borrowed per request, semantic
   search, top 10, query vectors already cached in the process), taking turns query by query: on the writer alone
   (no reader configured: one connection, the query log riding in the search's transaction), and on the replica
   with the writes on the writer; with the query log batched (``query_log_flush_seconds`` 5, the default: the
   writer is borrowed once per 32 searches or 5 s) and flushed after every search (0: every search borrows the
   writer and commits its row there, the worst case).
3. Visibility delay: a row committed on the primary until a query on the replica sees it, idle and while another
   connection writes 10 MB statements on the primary; and the largest lag the product's probe reported meanwhile.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from write_path import clustered_vectors  # noqa: E402

from common import synthetic_loads  # noqa: E402
from rag.config import Settings  # noqa: E402
from rag.store.bulk import bulk_load  # noqa: E402
from rag_local.replica import replicated_servers, wait_for_replay  # noqa: E402

MODEL, DIM, DOC_CHUNKS = "local/all-MiniLM-L6-v2", 384, 1000


class FixedEmbedder:
    """Query vectors decided in advance (the local model's time is not what is measured)."""

    model_id, dimension = MODEL, DIM

    def __init__(self, vectors: np.ndarray) -> None:
        self.vectors = vectors

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [self.vectors[int(text.split()[-1]) % len(self.vectors)].tolist() for text in texts]


def load(url: str, n: int) -> None:
    loads = synthetic_loads(clustered_vectors(n, DIM, seed=42), DOC_CHUNKS)
    with psycopg.connect(url, autocommit=True) as conn:
        from pgvector.psycopg import register_vector

        register_vector(conn)
        bulk_load(conn, loads, MODEL, DIM)
        conn.execute("ANALYZE")


def percentiles(values: list[float]) -> str:
    values = sorted(values)
    return f"p50 {statistics.median(values):7.2f}  p95 {values[int(0.95 * (len(values) - 1))]:7.2f}  max {values[-1]:7.2f}"


def _search(settings: Settings, embedder: FixedEmbedder, request: Any, conn: psycopg.Connection, writer: Any) -> bool:
    """One search as the API runs it; whether it read the replica (it was given the writer for its writes)."""
    from rag.search.service import run_search

    run_search(conn, embedder, settings, request, writer)  # type: ignore[arg-type]  # a duck-typed embedder
    return writer is not None


def search_latencies(
    configs: dict[str, Settings], embedder: FixedEmbedder, queries: int, rounds: int = 3
) -> dict[str, tuple[list[float], int]]:
    """Per configuration: milliseconds per search (the last round; the first fills the process's query cache), and
    searches served by the replica. The configurations take turns query by query, so none gets a warmer server."""
    from rag.search.engine import SearchScope
    from rag.search.service import SearchQuery
    from rag.store.replica import Connections

    results: dict[str, tuple[list[float], int]] = {}
    for _ in range(rounds):
        results = {label: ([], 0) for label in configs}
        for i in range(queries):
            request = SearchQuery(f"question {i}", SearchScope(tenant_id="bench"), ("chunk",), "semantic", 10)
            for label, settings in configs.items():
                started = time.perf_counter()
                connections = Connections(settings)
                on_replica = connections.read(partial(_search, settings, embedder, request))
                connections.release()
                latencies, served = results[label]
                latencies.append((time.perf_counter() - started) * 1000)
                results[label] = (latencies, served + on_replica)
    return results


def visibility_delays(primary_url: str, replica_url: str, samples: int) -> list[float]:
    """Milliseconds from a commit on the primary until the replica sees the row."""
    delays = []
    with psycopg.connect(primary_url, autocommit=True) as primary, psycopg.connect(replica_url, autocommit=True) as replica:
        primary.execute("CREATE TABLE IF NOT EXISTS bench_marker (id int PRIMARY KEY)")
        primary.execute("TRUNCATE bench_marker")
        wait_for_replay(primary_url, replica_url)
        for i in range(samples):
            primary.execute("INSERT INTO bench_marker VALUES (%s)", (i,))
            started = time.perf_counter()
            while replica.execute("SELECT 1 FROM bench_marker WHERE id = %s", (i,)).fetchone() is None:
                time.sleep(0.0005)
            delays.append((time.perf_counter() - started) * 1000)
            time.sleep(0.02)
    return delays


def under_write_load(primary_url: str, replica_url: str, samples: int) -> tuple[list[float], float]:
    """Visibility delays while another connection writes, and the largest lag ``measure_lag`` reported meanwhile."""
    from rag.store.replica import measure_lag

    stop, worst = threading.Event(), [0.0]

    def write() -> None:
        with psycopg.connect(primary_url, autocommit=True) as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS bench_load (id int, body text)")
            while not stop.is_set():
                conn.execute("INSERT INTO bench_load SELECT g, repeat('x', 500) FROM generate_series(1, 20000) g")
                conn.execute("TRUNCATE bench_load")

    def probe() -> None:
        with psycopg.connect(replica_url, autocommit=True) as conn:
            while not stop.is_set():
                worst[0] = max(worst[0], measure_lag(conn) or 0.0)
                time.sleep(0.05)

    threads = [threading.Thread(target=write), threading.Thread(target=probe)]
    for thread in threads:
        thread.start()
    try:
        time.sleep(1.0)
        delays = visibility_delays(primary_url, replica_url, samples)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    return delays, worst[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--samples", type=int, default=50, help="visibility samples, idle and under load")
    args = parser.parse_args()

    from rag.store.connection import close_pool
    from rag.store.replica import close_reader_pool

    with replicated_servers(Settings()) as servers:
        started = time.perf_counter()
        load(servers.primary_url, args.chunks)
        loaded = time.perf_counter() - started
        replayed = wait_for_replay(servers.primary_url, servers.replica_url, timeout_seconds=600)
        print(f"bulk load of {args.chunks} chunks (+HNSW): {loaded:.1f} s on the primary, replayed {replayed:.2f} s later")

        embedder = FixedEmbedder(clustered_vectors(args.queries, DIM, seed=7))
        print(f"\nsearch as the API runs it, {args.queries} semantic searches, ms:")
        for flush in (5.0, 0.0):  # apart: the process's pending query-log rows are shared by every configuration
            base = Settings(database_url=servers.primary_url, query_log_flush_seconds=flush)
            replica = base.with_values(database_reader_url=servers.replica_url)
            configs = {f"query log flush {flush:.0f} s, writer only": base, f"query log flush {flush:.0f} s, replica": replica}
            for label, (latencies, on_replica) in search_latencies(configs, embedder, args.queries).items():
                print(f"  {label:<32} {percentiles(latencies)}  ({on_replica} on the replica)")
        close_reader_pool()
        close_pool()

        print("\nvisibility delay (commit on the primary -> seen on the replica), ms:")
        print(f"  idle              {percentiles(visibility_delays(servers.primary_url, servers.replica_url, args.samples))}")
        delays, worst = under_write_load(servers.primary_url, servers.replica_url, args.samples)
        print(f"  under write load  {percentiles(delays)}  (largest lag measured by the probe: {worst * 1000:.0f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
