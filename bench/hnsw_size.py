"""Bytes per row of pgvector's HNSW index (and of the table holding the vectors) against the vector's dimension.

For each ``--dims`` value: ``--rows`` clustered unit-scale vectors copied into a table of their own, an HNSW index
built with the product's graph parameters (m 16, ef_construction 128, cosine), then the index's size and the
table's (heap and TOAST) divided by the rows, and the build's rows per second. The sizes decide how much memory
an instance needs per chunk (docs/capacity.md): an 8 KB page holds two graph elements up to 768 dimensions and
one from about 1,000.

    .venv/bin/python bench/hnsw_size.py --dims 256,384,512,768,1024,1536 --rows 4000
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import bench_database  # noqa: E402
from rag.store.schema import HNSW_EF_CONSTRUCTION, HNSW_M  # noqa: E402


def measure(conn: psycopg.Connection, dims: int, rows: int, rng: np.random.Generator) -> dict[str, float]:
    centres = rng.normal(size=(50, dims))
    vectors = (centres[rng.integers(0, 50, rows)] + 0.3 * rng.normal(size=(rows, dims))).astype(np.float32)
    table = f"vectors_{dims}"
    conn.execute(f"CREATE TABLE {table} (id int, embedding vector({dims}))")
    with conn.cursor().copy(f"COPY {table} (id, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
        copy.set_types(["int4", "vector"])
        for i, vector in enumerate(vectors):
            copy.write_row((i, vector))
    started = time.perf_counter()
    conn.execute(
        f"CREATE INDEX {table}_hnsw ON {table} USING hnsw (embedding vector_cosine_ops)"
        f" WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})"
    )
    build = time.perf_counter() - started
    index_bytes, table_bytes = conn.execute(
        f"SELECT pg_relation_size('{table}_hnsw'), pg_total_relation_size('{table}') - pg_indexes_size('{table}')"
    ).fetchone() or (0, 0)
    return {"index": index_bytes / rows, "table": table_bytes / rows, "build_rows_per_s": rows / build}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dims", default="256,384,512,768,1024,1536", help="comma-separated dimensions")
    parser.add_argument("--rows", type=int, default=4000, help="rows per dimension (default 4000)")
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    print(f"{'dims':>6} {'HNSW B/row':>11} {'table B/row':>12} {'build rows/s':>13}")
    with bench_database() as url, psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        register_vector(conn)
        for dims in (int(d) for d in args.dims.split(",")):
            m = measure(conn, dims, args.rows, rng)
            print(f"{dims:>6} {m['index']:>11,.0f} {m['table']:>12,.0f} {m['build_rows_per_s']:>13,.0f}", flush=True)


if __name__ == "__main__":
    main()
