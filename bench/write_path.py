"""Write-path benchmark: our per-document write vs a bare binary COPY, and the bulk path.

    .venv/bin/python bench/write_path.py [--prefill 50000] [--rows 3000] [--bulk 50000]

Uses DATABASE_URL or the embedded server (started if needed) and a throw-away database.
1. For 384 and 1536 dimensions: a chunks table already holding --prefill rows of that
   model with its HNSW index; then --rows more rows are written, alternately by
   ``rag.store.documents.replace_document`` (one transaction per 50-chunk document,
   what ingest does) and by a bare binary COPY of the same kind of rows into the same
   indexed table (the pgvector baseline). Reports rows/s of each and the ratio.
2. The bulk path (``rag.store.bulk.bulk_load``): --bulk chunks at 384 dimensions
   loaded with index maintenance deferred, the HNSW build included in the time.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import bench_database  # noqa: E402
from rag.config import REPO_ROOT  # noqa: E402
from rag.parsing.model import Chunk, ParsedDocument  # noqa: E402
from rag.store import documents as repo  # noqa: E402
from rag.store.bulk import DocumentLoad, bulk_load  # noqa: E402
from rag.store.connection import connect  # noqa: E402
from rag.store.migrations import migrate  # noqa: E402

CHUNKS_PER_DOC = 50
TEXT = "Maya: we agreed to ship the rechargeable battery on both models and keep the backlight for premium. " * 8


def unit_vectors(n: int, dim: int, seed: int) -> np.ndarray:
    """Isotropic random unit vectors: the hardest case for HNSW (no structure at all)."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, dim), dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def clustered_vectors(n: int, dim: int, seed: int, topics: int = 500, spread: float = 0.6) -> np.ndarray:
    """Unit vectors around topic centres, closer to how text embeddings are distributed."""
    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(0).standard_normal((topics, dim), dtype=np.float32)
    vectors = centres[rng.integers(0, topics, n)] + spread * rng.standard_normal((n, dim), dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def document(n_chunks: int, key: str, project: str = "bench") -> tuple[repo.SourceObject, ParsedDocument, list[Chunk]]:
    chunks = [
        Chunk(index=i, text=TEXT, start_char=0, end_char=len(TEXT), token_count=180, start_turn=i, end_turn=i, speakers=("Maya",))
        for i in range(n_chunks)
    ]
    parsed = ParsedDocument(kind="transcript", format="transcript-txt", text=TEXT)
    source = repo.SourceObject(tenant_id="t", project_id=project, bucket="bench", key=key, content_sha256=key)
    return source, parsed, chunks


def bare_copy(conn, vectors: np.ndarray, model_id: str) -> None:
    """The baseline: the same rows by a plain binary COPY, no library code around it."""
    document_id = conn.execute(
        "INSERT INTO documents (tenant_id, project_id, bucket, object_key, status) VALUES ('t', 'bench', 'bench', %s, 'raw_ingested') RETURNING id",
        (f"bare/{uuid.uuid4()}",),
    ).fetchone()[0]
    with (
        conn.transaction(),
        conn.cursor() as cur,
        cur.copy(f"COPY chunks ({', '.join(repo.CHUNK_COPY_COLUMNS)}) FROM STDIN WITH (FORMAT BINARY)") as copy,
    ):
        copy.set_types(repo.CHUNK_COPY_TYPES)
        for i, vector in enumerate(vectors):
            copy.write_row(
                (document_id, "t", "bench", i, TEXT, 180, 0, len(TEXT), i, i, ["Maya"], None, None, [], vector, model_id)
            )


def prefill(conn, n: int, dim: int, model_id: str, make_vectors=unit_vectors) -> float:
    started = time.perf_counter()
    vectors = make_vectors(n, dim, seed=dim)
    loads = []
    for start in range(0, n, 1000):
        source, parsed, chunks = document(min(1000, n - start), f"prefill/{dim}/{start}")
        loads.append(DocumentLoad(source, repo.DocumentFields(), parsed, chunks, vectors[start : start + 1000]))
    bulk_load(conn, loads, model_id, dim)
    return time.perf_counter() - started


def write_path(conn, rows: int, dim: int, model_id: str) -> tuple[float, float]:
    """Alternate our path and the bare COPY, document by document; return rows/s of each."""
    ours = bare = 0.0
    # Different vectors of the same distribution for each path: inserting a vector the
    # index already holds is not the same work as inserting a new one.
    vectors = unit_vectors(rows, dim, seed=dim + 1)
    bare_vectors = unit_vectors(rows, dim, seed=dim + 2)
    for n, start in enumerate(range(0, rows, CHUNKS_PER_DOC)):
        batch = vectors[start : start + CHUNKS_PER_DOC]
        source, parsed, chunks = document(len(batch), f"ours/{dim}/{n}")
        t0 = time.perf_counter()
        repo.replace_document(conn, source, repo.DocumentFields(), parsed, chunks, batch, model_id)
        t1 = time.perf_counter()
        bare_copy(conn, bare_vectors[start : start + CHUNKS_PER_DOC], model_id)
        t2 = time.perf_counter()
        ours += t1 - t0
        bare += t2 - t1
    return rows / ours, rows / bare


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prefill", type=int, default=50_000, help="rows already in the indexed table (default 50000)")
    parser.add_argument("--rows", type=int, default=3_000, help="rows written by each path (default 3000)")
    parser.add_argument("--bulk", type=int, default=50_000, help="chunks for the bulk-path run (default 50000)")
    parser.add_argument("--dims", default="384,1536", help="dimensions to measure (default 384,1536)")
    args = parser.parse_args()

    with bench_database() as url, connect(url, register=False) as conn:
        migrate(conn, REPO_ROOT / "sql", {})
        from pgvector.psycopg import register_vector

        register_vector(conn)
        print(f"write path: {args.rows} rows per path into a table holding {args.prefill} rows of the model + HNSW")
        print(f"{'dim':>5} {'ours rows/s':>12} {'bare COPY rows/s':>17} {'ratio':>6}")
        for dim in (int(d) for d in args.dims.split(",")):
            model_id = f"bench/{dim}"
            prefill(conn, args.prefill, dim, model_id)
            ours, bare = write_path(conn, args.rows, dim, model_id)
            print(f"{dim:>5} {ours:>12.0f} {bare:>17.0f} {ours / bare:>6.0%}", flush=True)

        for name, make_vectors in (("random", unit_vectors), ("clustered", clustered_vectors)):
            conn.execute("TRUNCATE documents CASCADE; TRUNCATE keyword_stats")
            seconds = prefill(conn, args.bulk, 384, f"bench/bulk-{name}", make_vectors)
            print(
                f"bulk path, {name} vectors: {args.bulk} chunks at 384 d in {seconds:.1f} s = "
                f"{args.bulk / seconds:.0f} chunks/s (COPY + postings + parallel HNSW build)",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
