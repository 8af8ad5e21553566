"""Query benchmark: handler latency and recall@10 of the indexed path against an exact scan.

    .venv/bin/python bench/query_latency.py [--chunks 100000] [--queries 200] [--keep DATABASE] [--peers]

Synthetic unit vectors (384 d; clustered around topic centres like text embeddings,
or isotropic random with --vectors random) in projects of varied size: "p1" holds 1% of the
chunks, "p10" 10%, the rest the other 89%; a filter on all projects is 100%. For
each selectivity, --queries searches run through the query Lambda handler (API
Gateway v2 events, semantic mode, top_k 10, query vectors precomputed and cached so
the embedding time is not in the latency; it is reported separately for the local
model), then through ``run_search`` alone (the SQL path: scope, statement, results, query
log), then as a bare pgvector query on a bare table of the same rows in the same database
(the baseline); recall@10 compares the results with an exact (sequential) scan.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bare_pgvector import bare_search  # noqa: E402
from write_path import clustered_vectors, unit_vectors  # noqa: E402

from common import FILTERS, bench_database, exact_top10  # noqa: E402
from rag.config import REPO_ROOT  # noqa: E402
from rag.parsing.model import Chunk, ParsedDocument  # noqa: E402
from rag.store import documents as repo  # noqa: E402
from rag.store.bulk import DocumentLoad, bulk_load  # noqa: E402
from rag.store.connection import connect  # noqa: E402
from rag.store.migrations import migrate  # noqa: E402

TEXT = "Maya: we agreed to ship the rechargeable battery on both models and keep the backlight for premium. " * 2
MODEL = "local/all-MiniLM-L6-v2"  # the configured model, so the handler's searches use this index
DOC_CHUNKS = 1000


def load(conn, n: int, make_vectors) -> np.ndarray:
    vectors = make_vectors(n, 384, seed=42)
    sizes = {"p1": n // 100, "p10": n // 10}
    sizes["rest"] = n - sum(sizes.values())
    loads, start = [], 0
    for project, size in sizes.items():
        for offset in range(0, size, DOC_CHUNKS):
            count = min(DOC_CHUNKS, size - offset)
            chunks = [Chunk(index=i, text=TEXT[:200], start_char=0, end_char=200, token_count=40) for i in range(count)]
            source = repo.SourceObject("bench", project, "bench", f"projects/{project}/{start}.txt", content_sha256=str(start))
            parsed = ParsedDocument(kind="document", format="text", text=TEXT[:200])
            loads.append(DocumentLoad(source, repo.DocumentFields(), parsed, chunks, vectors[start : start + count]))
            start += count
    started = time.perf_counter()
    bulk_load(conn, loads, MODEL, 384, maintenance_work_mem="4GB")
    conn.execute("ANALYZE")
    print(f"loaded {n} chunks (+HNSW build) in {time.perf_counter() - started:.0f} s", flush=True)
    return vectors


def prewarm(conn) -> None:
    """Load the table and its HNSW index into shared_buffers: the latency below is of a warm server."""
    conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    index = conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'chunks' AND indexdef LIKE '%hnsw%'").fetchone()[0]
    sizes = conn.execute(
        "SELECT pg_size_pretty(pg_relation_size(%s::regclass)), current_setting('shared_buffers')", (index,)
    ).fetchone()
    print(f"HNSW index {sizes[0]}, shared_buffers {sizes[1]} (RAG_LOCAL_PG_SHARED_BUFFERS)", flush=True)
    conn.execute("SELECT pg_prewarm('chunks'), pg_prewarm(%s::regclass)", (index,))


def load_bare_baseline(conn) -> None:
    """The same rows in a bare pgvector table (id, project, vector; HNSW m 16 / ef_construction 64, btree on
    the project): what a hand-written pgvector search runs against, measured beside ours in the same run."""
    if conn.execute("SELECT to_regclass('bare_items')").fetchone()[0] is not None:
        if (
            conn.execute("SELECT count(*) FROM bare_items").fetchone()[0]
            == conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        ):
            return
        conn.execute("DROP TABLE bare_items")
    started = time.perf_counter()
    conn.execute(
        "CREATE TABLE bare_items AS SELECT id, project_id, embedding::vector(384) AS embedding FROM chunks WHERE tenant_id = 'bench'"
    )
    conn.execute("SET maintenance_work_mem = '2GB'")
    conn.execute("CREATE INDEX ON bare_items USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)")
    conn.execute("CREATE INDEX ON bare_items (project_id)")
    conn.execute("ANALYZE bare_items")
    print(f"bare baseline table (+HNSW build) in {time.perf_counter() - started:.0f} s", flush=True)


def configured_ef_search(conn, settings) -> int:
    """The ef_search the product's searches use on this index (rag.search.scope_size.ScopeSize.ef_search)."""
    from rag.search.engine import SearchScope
    from rag.search.scope_size import scope_size
    from rag.store.schema import embedding_index_name

    size = scope_size(conn, SearchScope("bench"), embedding_index_name("chunks", MODEL, 384))
    return size.ef_search(settings.search.hnsw_ef_search, settings.search.hnsw_ef_search_rows, settings.search.hnsw_ef_search_max)


def timed(run, queries, exact) -> tuple[float, float, float]:
    """p50 and p95 in ms, and mean recall@10, of ``run(i)`` (a list of ids) over the queries."""
    latencies, recalls = [], []
    for i in range(len(queries)):
        t0 = time.perf_counter()
        got = set(run(i))
        latencies.append((time.perf_counter() - t0) * 1000)
        recalls.append(len(got & exact[i]) / 10)
    latencies.sort()
    return statistics.median(latencies), latencies[int(0.95 * (len(latencies) - 1))], statistics.mean(recalls)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--ef-search",
        default="",
        help="comma-separated hnsw.ef_search values to sweep on the same data, each pinned whatever the index's size"
        " (default: the configured, adaptive one: RAG_HNSW_EF_SEARCH grown with the index's rows)",
    )
    parser.add_argument(
        "--vectors",
        choices=["clustered", "random"],
        default="clustered",
        help="clustered (like text embeddings, default) or isotropic random (HNSW's worst case)",
    )
    parser.add_argument(
        "--keep",
        metavar="DATABASE",
        help="load into this database and keep it; a later run with the same name and size reuses it",
    )
    parser.add_argument(
        "--peers", action="store_true", help="then langchain-postgres and llama-index on the same rows (bench/peer_stores.py)"
    )
    args = parser.parse_args()

    import os

    from rag.config import get_settings
    from rag.search import service
    from rag.search.engine import SearchScope
    from rag.search.query_cache import normalize_query
    from rag_local.api_server import http_api_event
    from rag_local.lambdas import LocalContext, load_handler_module

    with bench_database(args.keep) as url:
        os.environ["DATABASE_URL"] = url
        os.environ["POWERTOOLS_METRICS_DISABLED"] = "true"
        get_settings.cache_clear()
        with connect(url, register=False) as conn:
            migrate(conn, REPO_ROOT / "sql", {})
            from pgvector.psycopg import register_vector

            register_vector(conn)
            make_vectors = clustered_vectors if args.vectors == "clustered" else unit_vectors
            if conn.execute("SELECT count(*) FROM chunks").fetchone()[0] != args.chunks:
                conn.execute("TRUNCATE documents CASCADE; TRUNCATE keyword_stats")
                load(conn, args.chunks, make_vectors)
            load_bare_baseline(conn)
            queries = make_vectors(args.queries, 384, seed=7)
            prewarm(conn)
            conn.execute("SELECT pg_prewarm('bare_items')")
            from rag.embedding import get_embedder

            embedder = get_embedder(get_settings())
            handler = load_handler_module("query").lambda_handler
            # Query vectors go into the warm LRU: the latency below is search, not embedding.
            for i, q in enumerate(queries):
                service._cache._lru[(MODEL, normalize_query(f"q{i}"))] = q
            filters = FILTERS
            exact = exact_top10(conn, queries)
            for pinned in [int(v) for v in args.ef_search.split(",") if v] or [None]:
                if pinned is not None:  # the same ef_search whatever the index's size
                    os.environ["RAG_HNSW_EF_SEARCH"] = os.environ["RAG_HNSW_EF_SEARCH_MAX"] = str(pinned)
                get_settings.cache_clear()
                ef_search = configured_ef_search(conn, get_settings())
                print(f"\n{args.vectors} vectors, hnsw.ef_search {ef_search}" + (" (adaptive)" if pinned is None else ""))
                print(f"{'filter':>8} {'path':>28} {'p50 ms':>8} {'p95 ms':>8} {'recall@10':>10}")
                settings = get_settings()
                for label, projects in filters:

                    def through_handler(i: int, projects: list[str] = projects) -> list[int]:
                        body = {"query": f"q{i}", "mode": "semantic", "top_k": 10, "project_ids": projects}
                        event = http_api_event(
                            "POST", "/v1/search", {"Content-Type": "application/json"}, json.dumps(body).encode(), "bench", "k"
                        )
                        return [
                            int(r["id"])
                            for r in json.loads(handler(event, LocalContext(function_name="query"))["body"])["results"]
                        ]

                    def sql_path(i: int, projects: list[str] = projects, settings: Any = settings) -> list[int]:
                        query = service.SearchQuery(f"q{i}", SearchScope("bench", tuple(projects)), mode="semantic", top_k=10)
                        return [hit.id for _, hit in service.run_search(conn, embedder, settings, query)[0]]

                    def bare(i: int, projects: list[str] = projects, ef_search: int = ef_search) -> list[int]:
                        return bare_search(conn, projects, queries[i], ef_search)

                    for path, run in (("query handler (API event)", through_handler), ("run_search (SQL path)", sql_path),
                                      ("bare pgvector, same server", bare)):  # fmt: skip
                        p50, p95, recall = timed(run, queries, exact[label])
                        print(f"{label:>8} {path:>28} {p50:8.2f} {p95:8.2f} {recall:10.3f}", flush=True)
            if args.peers:  # in their own venv (make peers), at the last ef_search, taking turns with two of ours
                from peer_stores import run_from_main

                ours = {"run_search (SQL path)": sql_path, "bare pgvector, same server": bare}
                run_from_main(conn, url, queries, exact, ef_search, ours)

    embedder.embed(["warm up"])
    t0 = time.perf_counter()
    for i in range(20):
        embedder.embed([f"what did we decide about the battery supplier, question {i}?"])
    print(f"query embedding (local model, uncached): {(time.perf_counter() - t0) * 1000 / 20:.1f} ms per query")
    return 0


if __name__ == "__main__":
    sys.exit(main())
