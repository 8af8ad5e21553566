"""Vector index variants at scale: which reaches recall@10 >= .95 within 15 ms p95 at a million chunks.

    .venv/bin/python bench/index_variants.py --keep rag_bench_1m [--queries 200]
        [--variants full,halfvec,binary] [--ef-search 40,100,200,400] [--rerank 40,100,200]

Runs on a database that ``bench/query_latency.py --keep NAME --chunks N`` built and kept:
its ``bare_items`` table (id, project, vector(384); HNSW m 16 / ef_construction 64) holds
the same rows as the product's chunks. The same query vectors as query_latency.py (seed 7)
are searched on the same server at 1% / 10% / 100% project filters, with pgvector's
iterative scan, through these indexes:

- ``full``: HNSW on the vectors themselves (the product's index today);
- ``halfvec``: HNSW on ``embedding::halfvec(384)`` (half the bytes), the top ``--rerank``
  candidates re-ranked by the full vectors;
- ``efc128``: HNSW on the vectors as ``full``, built with ef_construction 128 instead of 64 (a
  denser graph: a slower build for higher recall at the same ef_search), on a copy of the table;
- ``binary``: HNSW on ``binary_quantize(embedding)::bit(384)`` (Hamming distance, 1/32 of the
  bytes), the top ``--rerank`` candidates re-ranked by the full vectors.

Extra indexes are built once and kept (build time and size printed). The exact top 10
of each query and filter (a sequential scan) is computed once and kept in ``bench_exact``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from write_path import clustered_vectors  # noqa: E402

from common import FILTERS, bench_database, exact_top10  # noqa: E402

INDEXES = {
    "efc128": "CREATE TABLE IF NOT EXISTS bare_items_efc128 AS SELECT * FROM bare_items;"
    " CREATE INDEX IF NOT EXISTS bare_items_efc128_hnsw ON bare_items_efc128"
    " USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 128);"
    " CREATE INDEX IF NOT EXISTS bare_items_efc128_project ON bare_items_efc128 (project_id); ANALYZE bare_items_efc128",
    "halfvec": "CREATE INDEX IF NOT EXISTS bare_items_halfvec ON bare_items"
    " USING hnsw ((embedding::halfvec(384)) halfvec_cosine_ops) WITH (m = 16, ef_construction = 64)",
    "binary": "CREATE INDEX IF NOT EXISTS bare_items_binary ON bare_items"
    " USING hnsw ((binary_quantize(embedding)::bit(384)) bit_hamming_ops) WITH (m = 16, ef_construction = 64)",
}

# {filter} is "" or "WHERE project_id = ANY(%(projects)s)"; %(q)s is the query vector.
STATEMENTS = {
    "full": "SELECT id FROM bare_items {filter} ORDER BY embedding <=> %(q)s LIMIT 10",
    "efc128": "SELECT id FROM bare_items_efc128 {filter} ORDER BY embedding <=> %(q)s LIMIT 10",
    "halfvec": "SELECT id FROM (SELECT id, embedding FROM bare_items {filter}"
    " ORDER BY embedding::halfvec(384) <=> %(q)s::halfvec(384) LIMIT %(k)s) c ORDER BY embedding <=> %(q)s LIMIT 10",
    "binary": "SELECT id FROM (SELECT id, embedding FROM bare_items {filter}"
    " ORDER BY binary_quantize(embedding)::bit(384) <~> binary_quantize(%(q)s) LIMIT %(k)s) c"
    " ORDER BY embedding <=> %(q)s LIMIT 10",
}


def build_index(conn, variant: str) -> None:
    if variant not in INDEXES:
        return
    started = time.perf_counter()
    conn.execute("SET maintenance_work_mem = '4GB'")
    conn.execute(INDEXES[variant])
    index = f"bare_items_{variant}_hnsw" if variant == "efc128" else f"bare_items_{variant}"
    size = conn.execute("SELECT pg_size_pretty(pg_relation_size(%s::regclass))", (index,)).fetchone()[0]
    conn.execute("SELECT pg_prewarm(%s::regclass)", (index,))
    if variant == "efc128":
        conn.execute("SELECT pg_prewarm('bare_items_efc128')")
    print(f"{variant} index: {size} (built or found in {time.perf_counter() - started:.0f} s)", flush=True)


def measure(conn, variant: str, projects: list[str], queries: np.ndarray, exact: list[set[int]], ef: int, k: int):
    """p50 and p95 in ms, mean recall@10 and mean rows returned."""
    sql = STATEMENTS[variant].format(filter="WHERE project_id = ANY(%(projects)s)" if projects else "")
    latencies, recalls, counts = [], [], []
    for i, q in enumerate(queries):
        started = time.perf_counter()
        with conn.transaction():
            conn.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', %s, true),"
                         " set_config('max_parallel_workers_per_gather', '0', true)", (str(ef),))  # fmt: skip
            ids = {r[0] for r in conn.execute(sql, {"q": q, "projects": projects, "k": k})}
        latencies.append((time.perf_counter() - started) * 1000)
        recalls.append(len(ids & exact[i]) / 10)
        counts.append(len(ids))
    latencies.sort()
    return (
        statistics.median(latencies),
        latencies[int(0.95 * (len(latencies) - 1))],
        statistics.mean(recalls),
        statistics.mean(counts),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", required=True, metavar="DATABASE", help="a database query_latency.py --keep built")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--variants", default="full,halfvec,binary")
    parser.add_argument("--ef-search", default="40,100,200,400", help="comma-separated hnsw.ef_search values")
    parser.add_argument("--rerank", default="40,100,200", help="comma-separated candidate counts re-ranked (halfvec, binary)")
    parser.add_argument("--filters", default="1%,10%,100%")
    args = parser.parse_args()
    variants = [v for v in args.variants.split(",") if v]
    unknown = set(variants) - set(STATEMENTS)
    if unknown:
        parser.error(f"unknown variants {sorted(unknown)}; choose from {sorted(STATEMENTS)}")
    import psycopg
    from pgvector.psycopg import register_vector

    with bench_database(args.keep) as url, psycopg.connect(url, autocommit=True) as conn:
        if conn.execute("SELECT to_regclass('bare_items')").fetchone()[0] is None:
            parser.error(f"{args.keep} has no bare_items table: build it with bench/query_latency.py --keep {args.keep}")
        register_vector(conn)
        conn.execute("SET statement_timeout = 0")  # index builds and exact scans at a million rows
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        conn.execute("SELECT pg_prewarm('bare_items')")
        print(f"{conn.execute('SELECT count(*) FROM bare_items').fetchone()[0]} rows", flush=True)
        queries = clustered_vectors(args.queries, 384, seed=7)
        exact = exact_top10(conn, queries)
        for variant in variants:
            build_index(conn, variant)
        print(f"\n{'variant':>8} {'filter':>6} {'ef':>5} {'rerank':>6} {'p50 ms':>8} {'p95 ms':>8} {'recall@10':>10} {'rows':>5}")
        wanted = [f for f in FILTERS if f[0] in args.filters.split(",")]
        for variant in variants:
            for ef in [int(v) for v in args.ef_search.split(",")]:
                for k in [int(v) for v in args.rerank.split(",")] if variant in ("halfvec", "binary") else [10]:
                    for label, projects in wanted:
                        p50, p95, recall, rows = measure(conn, variant, projects, queries, exact[label], ef, k)
                        print(
                            f"{variant:>8} {label:>6} {ef:>5} {k:>6} {p50:8.2f} {p95:8.2f} {recall:10.3f} {rows:5.1f}", flush=True
                        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
