"""The peers on the query benchmark's rows: langchain-postgres and llama-index's PGVectorStore, same server.

    make peers   # .local/peers: the peers and their pinned dependencies (bench/peers/requirements.txt), not in .venv
    .local/peers/bin/python bench/peer_stores.py --database-url URL --data FILE [--ef-search 40]

Normally started by ``bench/query_latency.py --peers``, which writes FILE (an .npz: the rows' ids, projects and
vectors as they are in its bare pgvector table, the query vectors, and the exact top 10 ids of each query at each
filter) and passes its own database and hnsw.ef_search. Each peer loads the same rows into a table of its own
through its own documented API (skipped when a kept database already holds them), with metadata
{"project": ...} and our id as its document / node id, then builds an HNSW index (cosine, m 16,
ef_construction 64, as the baseline) the way its docs show. Then, for each filter (1% = project p1,
10% = p10, 100% = none), the same queries go through the peer's similarity search by vector with k 10 and
a metadata filter ``project in [...]``; hnsw.ef_search is set through the peer's own option. Under
query_latency.py (``--serve``) this script answers one query at a time over a pipe, and query_latency.py's
run_search and bare pgvector query take turns with the peers query by query, each path timed in its own
process. Run alone, it times the peers and the same bare pgvector query, taking turns likewise. Printed as
query_latency.py prints its paths: p50 / p95 ms and recall@10 against the exact scan, plus the mean number of
rows returned where a path returned fewer than 10.

How each peer is set up (the versions pinned in bench/peers/requirements.txt):

- langchain-postgres: ``PGEngine`` + ``PGVectorStore`` (its README: ``PGVector`` is deprecated since 0.0.14,
  migrate to ``PGVectorStore``), psycopg 3 async driver under SQLAlchemy, called through the synchronous
  methods (the README's example; they run on the engine's background event loop). ``init_vectorstore_table``
  with a metadata column ``project TEXT`` (its how-to's way to make a metadata key filterable), rows added by
  ``add_embeddings``, then ``apply_vector_index(HNSWIndex(m=16, ef_construction=64))`` (cosine is its default
  distance); queries pass ``index_query_options=HNSWQueryOptions(ef_search=N)``, which it turns into
  ``SET LOCAL hnsw.ef_search`` before each search; filter ``{"project": {"$in": [...]}}``.
- llama-index: ``PGVectorStore.from_params(..., embed_dim=384, use_jsonb=True, hnsw_kwargs={"hnsw_m": 16,
  "hnsw_ef_construction": 64, "hnsw_ef_search": N, "hnsw_dist_method": "vector_cosine_ops"})`` (psycopg2 for
  its synchronous calls, as from_params sets), ``TextNode`` rows (id_ = our id, metadata {"project": ...})
  added by ``add``; the store is first opened without hnsw_kwargs so that the rows go in before its
  ``CREATE INDEX ... USING hnsw`` runs (on the next open, with hnsw_kwargs), which builds the graph once
  instead of row by row; queries are ``VectorStoreQuery(query_embedding=..., similarity_top_k=10,
  filters=MetadataFilters([MetadataFilter("project", [...], FilterOperator.IN)]))``. With hnsw_kwargs it
  runs ``SET hnsw.ef_search`` and ``SET LOCAL enable_bitmapscan = off`` before each search.

Neither peer sets hnsw.iterative_scan, and neither documents an index on the metadata key: none is added.
The peers' connections get maintenance_work_mem 1GB and no statement_timeout (PGOPTIONS, read by libpq under
both peers' drivers), so that the graph is built in memory as the baseline's is and its build is not cut by
the 30 s statement_timeout this project's migrations set on the database; neither setting touches a search.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PEERS_PYTHON = ROOT / ".local" / "peers" / "bin" / "python"
Search = Callable[[np.ndarray, list[str]], list[int]]
FILTERS = (("1%", ["p1"]), ("10%", ["p10"]), ("100%", []))
LANGCHAIN_TABLE = "peer_langchain_items"
LLAMA_TABLE = "peer_llama_items"  # llama-index names the table data_<table_name>
WARM_UP = 20


def write_data(conn: Any, path: Path, queries: np.ndarray, exact: dict[str, list[set[int]]]) -> None:
    """From query_latency.py (its venv, its connection): the rows of ``bare_items`` as they are stored, the
    query vectors and the exact top 10 ids per filter, for the peers to load and score against."""
    rows = conn.execute("SELECT id, project_id, embedding FROM bare_items ORDER BY id").fetchall()
    np.savez(
        path,
        ids=np.array([r[0] for r in rows], dtype=np.int64),
        projects=np.array([r[1] for r in rows]),
        vectors=np.array([np.asarray(getattr(r[2], "to_numpy", lambda v=r[2]: v)(), dtype=np.float32) for r in rows]),
        queries=np.asarray(queries, dtype=np.float32),
        **{f"exact_{label}": np.array([sorted(ids) for ids in exact[label]], dtype=np.int64) for label, _ in FILTERS},
    )


def run_from_main(conn: Any, url: str, queries: np.ndarray, exact: dict[str, list[set[int]]], ef_search: int,
                  ours: dict[str, Callable[[int, list[str]], list[int]]]) -> None:  # fmt: skip
    """The hook of ``query_latency.py --peers``: writes the data file, starts this script under the peers' python
    (``--serve``: it loads, then answers one query at a time), and times ``ours`` (query_latency.py's paths, called
    as ``run(i, projects)``) and the peers taking turns query by query, each timed in its own process."""
    if not PEERS_PYTHON.exists():
        print(f"\npeers skipped: {PEERS_PYTHON.relative_to(ROOT)} is missing; install them with `make peers`", flush=True)
        return
    path = ROOT / ".local" / "peer_data.npz"
    write_data(conn, path, queries, exact)
    cmd = [str(PEERS_PYTHON), __file__, "--database-url", url, "--data", str(path), "--ef-search", str(ef_search), "--serve"]
    with subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1) as peers:
        assert peers.stdin is not None and peers.stdout is not None
        for line in peers.stdout:  # anything a peer prints while it loads, then "ready"
            if line.strip() == "ready":
                break
            print(line, end="")
        else:
            raise RuntimeError("bench/peer_stores.py --serve did not start (its errors are above)")

        def remote(i: int, label: str, projects: list[str]) -> list[tuple[str, float, list[int]]]:
            peers.stdin.write(f"{i} {','.join(projects)}\n")  # type: ignore[union-attr]
            return [(name, ms, ids) for name, ms, ids in json.loads(peers.stdout.readline())]  # type: ignore[union-attr]

        runners = [timing(name, run) for name, run in ours.items()] + [remote]
        print(f"\nthe peers beside this project, hnsw.ef_search {ef_search} (paths interleaved query by query)")
        print(f"{'filter':>8} {'path':>28} {'p50 ms':>8} {'p95 ms':>8} {'recall@10':>10}", flush=True)
        truth = {label: [sorted(ids) for ids in exact[label]] for label, _ in FILTERS}
        for label, projects in FILTERS:
            print("\n".join(measure(runners, truth[label], label, projects)), flush=True)
        peers.stdin.close()
        if peers.wait() != 0:
            raise RuntimeError("bench/peer_stores.py --serve failed")


Timed = Callable[[int, str, list[str]], list[tuple[str, float, list[int]]]]


def timing(name: str, run: Callable[[int, list[str]], list[int]]) -> Timed:
    """A path that returns ids, timed here: ``(name, ms, ids)``."""

    def timed(i: int, label: str, projects: list[str]) -> list[tuple[str, float, list[int]]]:
        t0 = time.perf_counter()
        got = run(i, projects)
        return [(name, (time.perf_counter() - t0) * 1000, [int(v) for v in got])]

    return timed


def percentiles(latencies: list[float]) -> tuple[float, float]:
    """p50 and p95 as query_latency.py's ``timed`` takes them."""
    latencies = sorted(latencies)
    return statistics.median(latencies), latencies[int(0.95 * (len(latencies) - 1))]


def measure(runners: list[Timed], exact: Any, label: str, projects: list[str]) -> list[str]:
    """One table row per path: the paths take turns query by query (interleaved, so that a busy minute on a
    shared machine falls on all of them alike), after a warm-up of each."""
    for run in runners:
        for i in range(min(WARM_UP, len(exact))):
            run(i, label, projects)
    latencies: dict[str, list[float]] = {}
    recalls: dict[str, list[float]] = {}
    counts: dict[str, list[int]] = {}
    for i in range(len(exact)):
        truth = {int(v) for v in exact[i]}
        for run in runners:
            for name, ms, got in run(i, label, projects):
                latencies.setdefault(name, []).append(ms)
                recalls.setdefault(name, []).append(len(set(got) & truth) / 10)
                counts.setdefault(name, []).append(len(got))
    lines = []
    for name in latencies:
        p50, p95 = percentiles(latencies[name])
        line = f"{label:>8} {name:>28} {p50:8.2f} {p95:8.2f} {statistics.mean(recalls[name]):10.3f}"
        if min(counts[name]) < 10:
            line += f"   rows returned: mean {statistics.mean(counts[name]):.1f}, min {min(counts[name])}"
        lines.append(line)
    # A path that stops short returns fewer rows exactly on the queries where a filter starves the graph's
    # first candidates, the ones that cost a path returning 10 rows most: compare also on the others.
    full = [i for i in range(len(exact)) if all(counted[i] == 10 for counted in counts.values())]
    if 0 < len(full) < len(exact):
        lines.append(f"{label:>8} {'(the ' + str(len(full)) + ' queries where every path returned 10 rows)':>28}")
        for name in latencies:
            p50, p95 = percentiles([latencies[name][i] for i in full])
            lines.append(f"{label:>8} {name:>28} {p50:8.2f} {p95:8.2f}")
    return lines


def bare(url: str, data: Any, ef_search: int) -> Search:
    """query_latency.py's bare pgvector query on its ``bare_items`` (iterative scan, btree on the project), here
    again so that the peers have the reference beside them in the same minutes: the ratios to it carry over."""
    import psycopg
    from pgvector.psycopg import register_vector

    conn = psycopg.connect(url, autocommit=True)
    register_vector(conn)

    def search(query: np.ndarray, projects: list[str]) -> list[int]:
        from bare_pgvector import bare_search

        return bare_search(conn, projects, query, ef_search)

    return search


def prewarm(url: str, table: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        conn.execute("ANALYZE " + table)
        conn.execute(
            "SELECT pg_prewarm(%s::regclass), pg_prewarm(indexrelid::regclass) FROM pg_index WHERE indrelid = %s::regclass",
            (table, table),
        )


def loaded(url: str, table: str, rows: int) -> tuple[bool, bool]:
    """Whether a kept database already holds the peer's table with all the rows, and its HNSW index
    (a table with other rows is dropped)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        if conn.execute("SELECT to_regclass(%s)", (table,)).fetchone()[0] is None:  # type: ignore[index]
            return False, False
        if conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0] != rows:  # type: ignore[index]
            conn.execute(f'DROP TABLE "{table}"')
            return False, False
        hnsw = conn.execute(
            "SELECT count(*) FROM pg_indexes WHERE tablename = %s AND indexdef LIKE '%%hnsw%%'", (table,)
        ).fetchone()[0]  # type: ignore[index]
        return True, hnsw == 1


def sqlalchemy_url(url: str, driver: str) -> Any:
    from psycopg.conninfo import conninfo_to_dict
    from sqlalchemy.engine import URL

    info = conninfo_to_dict(url)
    return URL.create(
        driver,
        username=info.get("user"),
        password=info.get("password"),
        host=info.get("host"),
        port=int(info["port"]) if info.get("port") else None,
        database=info.get("dbname"),
    )


def langchain(url: str, data: Any, ef_search: int) -> Search:
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_postgres import Column, PGEngine, PGVectorStore
    from langchain_postgres.v2.indexes import HNSWIndex, HNSWQueryOptions

    engine = PGEngine.from_connection_string(url=sqlalchemy_url(url, "postgresql+psycopg"))
    # Searches pass vectors; the embedding service is required by the constructor but never called.
    embedding = DeterministicFakeEmbedding(size=384)
    rows, index = loaded(url, LANGCHAIN_TABLE, len(data["ids"]))
    started = time.perf_counter()
    if not rows:
        engine.init_vectorstore_table(table_name=LANGCHAIN_TABLE, vector_size=384, metadata_columns=[Column("project", "TEXT")])
        store = PGVectorStore.create_sync(
            engine=engine, table_name=LANGCHAIN_TABLE, embedding_service=embedding, metadata_columns=["project"]
        )
        ids, projects, vectors = data["ids"], data["projects"], data["vectors"]

        async def add(start: int, end: int) -> None:
            await store.aadd_embeddings(
                texts=[f"chunk {i}" for i in ids[start:end]],
                embeddings=vectors[start:end].tolist(),
                metadatas=[{"project": str(p)} for p in projects[start:end]],
                ids=[str(uuid.UUID(int=int(i))) for i in ids[start:end]],
            )

        # It inserts row by row, a transaction each: four batches at a time (its pool holds five connections).
        for start in range(0, len(ids), 4000):
            asyncio.run(_gather(*(add(s, min(s + 1000, len(ids))) for s in range(start, min(start + 4000, len(ids)), 1000))))
    store = PGVectorStore.create_sync(
        engine=engine,
        table_name=LANGCHAIN_TABLE,
        embedding_service=embedding,
        metadata_columns=["project"],
        index_query_options=HNSWQueryOptions(ef_search=ef_search),
    )
    if not index:
        store.apply_vector_index(HNSWIndex(m=16, ef_construction=64))
    if not (rows and index):
        print(f"langchain-postgres: rows and HNSW index in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    prewarm(url, LANGCHAIN_TABLE)

    def search(query: np.ndarray, projects: list[str]) -> list[int]:
        where = {"project": {"$in": projects}} if projects else None
        docs = store.similarity_search_by_vector(query.tolist(), k=10, filter=where)
        return [uuid.UUID(doc.id).int for doc in docs]  # type: ignore[arg-type]

    return search


def llama_index(url: str, data: Any, ef_search: int) -> Search:
    from llama_index.core.schema import TextNode
    from llama_index.core.vector_stores.types import (
        FilterOperator,
        MetadataFilter,
        MetadataFilters,
        VectorStoreQuery,
    )
    from llama_index.vector_stores.postgres import PGVectorStore

    def open_store(hnsw_kwargs: dict[str, Any] | None) -> Any:
        return PGVectorStore.from_params(
            connection_string=sqlalchemy_url(url, "postgresql+psycopg2"),
            async_connection_string=sqlalchemy_url(url, "postgresql+asyncpg"),
            table_name=LLAMA_TABLE,
            embed_dim=384,
            use_jsonb=True,
            hnsw_kwargs=hnsw_kwargs,
        )

    hnsw = {"hnsw_m": 16, "hnsw_ef_construction": 64, "hnsw_ef_search": ef_search, "hnsw_dist_method": "vector_cosine_ops"}
    table = f"data_{LLAMA_TABLE}"
    rows, index = loaded(url, table, len(data["ids"]))
    started = time.perf_counter()
    if not rows:
        store = open_store(None)
        ids, projects, vectors = data["ids"], data["projects"], data["vectors"]
        for start in range(0, len(ids), 1000):
            end = start + 1000
            store.add(
                [
                    TextNode(id_=str(i), text=f"chunk {i}", embedding=v.tolist(), metadata={"project": str(p)})
                    for i, p, v in zip(ids[start:end], projects[start:end], vectors[start:end])
                ]
            )
    store = open_store(dict(hnsw))
    # Its first call opens the store: CREATE INDEX IF NOT EXISTS ... USING hnsw, here after the rows are in.
    store.query(VectorStoreQuery(query_embedding=data["queries"][0].tolist(), similarity_top_k=1))
    if not (rows and index):
        print(f"llama-index PGVectorStore: rows and HNSW index in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    prewarm(url, table)

    def search(query: np.ndarray, projects: list[str]) -> list[int]:
        filters = (
            MetadataFilters(filters=[MetadataFilter(key="project", value=projects, operator=FilterOperator.IN)])
            if projects
            else None
        )
        result = store.query(VectorStoreQuery(query_embedding=query.tolist(), similarity_top_k=10, filters=filters))
        return [int(i) for i in result.ids or []]

    return search


async def _gather(*coroutines: Any) -> None:
    await asyncio.gather(*coroutines)


def version(package: str) -> str:
    from importlib.metadata import version as installed

    return installed(package)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", required=True, help="the database query_latency.py loaded (libpq URL or conninfo)")
    parser.add_argument("--data", required=True, type=Path, help="the .npz query_latency.py --peers wrote")
    parser.add_argument("--ef-search", default="40", help="comma-separated hnsw.ef_search values, as the main run's")
    parser.add_argument("--only", choices=["langchain", "llama-index", "bare"], help="one path only")
    parser.add_argument("--serve", action="store_true", help="answer queries on stdin for query_latency.py --peers")
    args = parser.parse_args()

    data = dict(np.load(args.data))
    # Index builds in memory, as the baseline's (maintenance_work_mem), and not cut by the 30 s statement_timeout
    # that this project's migrations set on the database; libpq reads PGOPTIONS at connect time.
    options = " -c maintenance_work_mem=1GB -c statement_timeout=0"
    os.environ["PGOPTIONS"] = (os.environ.get("PGOPTIONS", "") + options).strip()
    peers = [
        ("langchain", f"langchain-postgres {version('langchain-postgres')}", langchain),
        ("llama-index", f"llama-index PGVS {version('llama-index-vector-stores-postgres')}", llama_index),
        ("bare", "bare pgvector, peers' run", bare),
    ]
    queries = data["queries"]
    for ef_search in [int(v) for v in args.ef_search.split(",") if v]:
        chosen = [
            (key, name, make) for key, name, make in peers if args.only in (None, key) and not (args.serve and key == "bare")
        ]
        searches = [(name, make(args.database_url, data, ef_search)) for _, name, make in chosen]
        if args.serve:  # for run_from_main: one line "i p1,p2" in, the peers' [name, ms, ids] out, until stdin closes
            print("ready", flush=True)
            for line in sys.stdin:
                i, _, csv = line.strip().partition(" ")
                projects = [p for p in csv.split(",") if p]
                answer = []
                for name, search in searches:
                    t0 = time.perf_counter()
                    got = search(queries[int(i)], projects)
                    answer.append([name, (time.perf_counter() - t0) * 1000, got])
                print(json.dumps(answer), flush=True)
            return 0
        runners = [timing(name, lambda i, projects, search=search: search(queries[i], projects)) for name, search in searches]
        print(f"\npeers, same rows and queries, hnsw.ef_search {ef_search} (paths interleaved query by query)")
        print(f"{'filter':>8} {'path':>28} {'p50 ms':>8} {'p95 ms':>8} {'recall@10':>10}", flush=True)
        for label, projects in FILTERS:
            print("\n".join(measure(runners, data[f"exact_{label}"], label, projects)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
