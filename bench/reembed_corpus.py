"""What moving a corpus to another embedding model costs the database: a whole run, step by step.

``--chunks`` chunks in 384-d clustered vectors are bulk-loaded as the local model's (with its HNSW index), then a
run moves them to another 384-d model through the real steps (rag.reembed.steps): plan, for each manifest submit
(the JSONL and its row map written to a local store), a batch engine that answers every record with a vector of the
same clusters (the model is not what is measured), import, and finish. Printed: each step's time, the imports' rows
per second (each UPDATE also adds a row version to the old model's index and fills the new one), how long the swap
held its locks, the table's size before and after (the second vector column), and the p50 of a top-10 search before
and after the switch (the new index answers it).

    .venv/bin/python bench/reembed_corpus.py --chunks 50000 --records 20000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import bench_database, synthetic_loads  # noqa: E402
from rag.config import REPO_ROOT, Settings  # noqa: E402
from rag.reembed import steps, switch  # noqa: E402
from rag.reembed.batch_jobs import LocalBatchJobs  # noqa: E402
from rag.reembed.storage import LocalManifestStore  # noqa: E402
from rag.store.bulk import bulk_load  # noqa: E402
from rag.store.connection import connect  # noqa: E402
from rag.store.migrations import migrate  # noqa: E402

SOURCE = "local/all-MiniLM-L6-v2"
DIMENSION = 384


class ClusteredEmbedder:
    """Vectors near one of 50 centres, as a real model's fall into topics; what the text says does not matter here."""

    model_id = "local/all-MiniLM-L6-v2-int8"
    dimension = DIMENSION
    max_input_tokens = 256

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.centres = self.rng.normal(size=(50, DIMENSION))

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        found = self.centres[self.rng.integers(0, 50, len(texts))] + 0.3 * self.rng.normal(size=(len(texts), DIMENSION))
        found /= np.linalg.norm(found, axis=1, keepdims=True)
        return found.astype(np.float32).tolist()


def load(conn: psycopg.Connection, n: int) -> None:
    bulk_load(conn, synthetic_loads(ClusteredEmbedder(1).embed([""] * n)), SOURCE, DIMENSION, maintenance_work_mem="1GB")
    conn.execute("ANALYZE chunks")


def search_p50_ms(conn: psycopg.Connection, model: str, queries: list[list[float]]) -> float:
    from pgvector import Vector

    statement = f"""SELECT id FROM chunks WHERE embedding_model = %s
                    ORDER BY embedding::vector({DIMENSION}) <=> %s::vector({DIMENSION}) LIMIT 10"""
    plan = "\n".join(row[0] for row in conn.execute("EXPLAIN " + statement, (model, Vector(queries[0]))).fetchall())
    assert "Index Scan" in plan and "_emb_" in plan, plan
    times = []
    for query in queries:
        started = time.perf_counter()
        conn.execute(statement, (model, Vector(query))).fetchall()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def table_mb(conn: psycopg.Connection) -> float:
    row = conn.execute("SELECT pg_total_relation_size('chunks')").fetchone()
    return (row[0] if row else 0) / 2**20


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=50_000, help="chunks in the corpus (default 50,000)")
    parser.add_argument("--records", type=int, default=20_000, help="records per manifest (default 20,000)")
    args = parser.parse_args()
    queries = ClusteredEmbedder(7).embed([""] * 50)
    with bench_database() as url, tempfile.TemporaryDirectory() as folder:
        with connect(url, register=False) as fresh:
            migrate(fresh, REPO_ROOT / "sql", {SOURCE: DIMENSION})
        return run(url, Path(folder), args.chunks, args.records, queries)


def run(url: str, folder: Path, chunks: int, records: int, queries: list[list[float]]) -> int:
    with connect(url) as conn:
        started = time.perf_counter()
        load(conn, chunks)
        print(f"loaded {chunks:,} chunks and their index in {time.perf_counter() - started:.0f} s", flush=True)
        before_mb, before_ms = table_mb(conn), search_p50_ms(conn, SOURCE, queries)
        settings = Settings(
            database_url=url, embedding_provider="local", reembed_provider="local", reembed_runtime="onnx-int8",
            reembed_manifest_records=records, reembed_local_dir=folder,
        )  # fmt: skip
        store = LocalManifestStore(folder)
        jobs = LocalBatchJobs(ClusteredEmbedder(2), store, settings)  # type: ignore[arg-type]  # the Embedder protocol

        def step(event: dict[str, Any]) -> tuple[dict[str, Any], float]:
            began = time.perf_counter()
            return steps.run_step(conn, settings, jobs, store, event), time.perf_counter() - began

        planned, plan_s = step({"action": "plan"})
        print(f"plan: {len(planned['manifests'])} manifests, {planned['records']:,} rows in {plan_s:.1f} s", flush=True)
        submit_s = engine_s = import_s = 0.0
        for item in planned["manifests"]:
            began = time.perf_counter()
            submitted = steps.submit(conn, settings, _NoJobs(), store, item["run_id"], item["manifest"])
            submit_s += time.perf_counter() - began
            job, took = _timed(jobs.submit, item["run_id"], item["manifest"], "bench", DIMENSION)
            engine_s += took
            imported, took = step({"action": "import", **submitted, "job_arn": job})
            import_s += took
        rows = planned["records"]
        print(f"submit (manifests written): {submit_s:.1f} s, {rows / submit_s:,.0f} rows/s")
        print(f"engine (synthetic vectors): {engine_s:.1f} s")
        print(f"import: {import_s:.1f} s, {rows / import_s:,.0f} rows/s", flush=True)
        swap_s: list[float] = []
        original = switch._swap  # noqa: SLF001 - timed in place

        def timed_swap(*a: Any) -> bool:
            result, took = _timed(original, *a)
            swap_s.append(took)
            return bool(result)

        switch._swap = timed_swap  # type: ignore[assignment]  # noqa: SLF001
        finished, finish_s = step({"action": "finish", "run_id": planned["run_id"]})
        assert finished["status"] == "switched", finished
        print(f"finish: {finish_s:.1f} s in all, the swap {swap_s[-1] * 1000:.0f} ms (its locks held)")
        conn.execute("ANALYZE chunks")
        after_ms = search_p50_ms(conn, ClusteredEmbedder.model_id, queries)
        print(f"table (heap, TOAST, indexes): {before_mb:,.0f} MB before, {table_mb(conn):,.0f} MB after")
        print(f"top-10 search p50: {before_ms:.2f} ms before (old index), {after_ms:.2f} ms after (new index)")
    return 0


class _NoJobs:
    """Submit's manifest only: the synthetic engine is timed on its own."""

    def submit(self, run_id: str, manifest: int, model: str, dimension: int) -> str:
        return f"pending-{manifest}"


def _timed(function: Any, *args: Any) -> tuple[Any, float]:
    began = time.perf_counter()
    return function(*args), time.perf_counter() - began


if __name__ == "__main__":
    sys.exit(main())
