"""Write-path benchmark: our per-document write and bulk path against bare pgvector baselines, and storage.

    .venv/bin/python bench/write_path.py [--prefill 100000] [--rows 3000] [--bulk 50000] [--dims 384]

Uses DATABASE_URL or the embedded server (started if needed) and a throw-away database. Every
baseline is measured in the same run, on the same server, interleaved with what it is compared to.
Chunk texts are 180-word windows of ../shared/eval/transcripts (real speech: about 54 distinct
lexemes per chunk), or of a synthetic Zipf vocabulary when that folder is missing (--text-dir).

1. Per-document write, for each of --dims: --rows rows by each path, alternately one 50-chunk
   document at a time: ``rag.store.documents.replace_document`` (what ingest does: document upsert,
   delete of old rows, binary COPY, BM25 bookkeeping, one transaction) and a bare binary COPY of
   the same kind of rows into the same table (document row + COPY, one transaction). Twice: into
   an empty table with the model's HNSW index, then into the table holding --prefill rows of the
   model (loaded by the bulk path) with its HNSW index.
2. Storage at that point: bytes per chunk of the chunks table and its indexes plus the BM25 tables,
   against a bare pgvector table (id, embedding) holding the same vectors with the same HNSW index;
   then keyword-search latency (questions of ../shared/eval/queries.jsonl, top 10) over that
   project and within one of its documents.
3. Bulk path at 384 d, per --bulk-vectors kind: ``rag.store.bulk.bulk_load`` of --bulk chunks
   (COPY, BM25 bookkeeping, HNSW build) against COPY-then-build (bare binary COPY of the same kind
   of rows into the emptied table without the HNSW index, then the same CREATE INDEX).
"""

from __future__ import annotations

import argparse
import json
import os
import random
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
from rag.store.migrations import ensure_embedding_index, migrate  # noqa: E402
from rag.store.schema import embedding_index_name  # noqa: E402

CHUNKS_PER_DOC = 50
WORDS_PER_CHUNK = 180
# Tables that hold BM25 data, whichever schema version is being measured.
BM25_TABLES = ("chunk_terms", "chunk_lexemes", "keyword_stats")


class Texts:
    """Chunk texts: windows of real transcripts, or of a synthetic Zipf vocabulary."""

    def __init__(self, text_dir: Path, seed: int = 1) -> None:
        self.rng = random.Random(seed)
        files = sorted(text_dir.rglob("*.txt")) if text_dir.is_dir() else []
        if files:
            self.words = [w for path in files for w in path.read_text(errors="replace").split()]
            self.source = f"{len(files)} transcripts of {text_dir}"
        else:
            vocab = [f"w{i}" for i in range(20_000)]
            weights = [1 / (i + 1) for i in range(len(vocab))]
            self.words = random.Random(0).choices(vocab, weights, k=500_000)
            self.source = "a synthetic Zipf vocabulary (no transcripts found)"

    def chunk(self) -> str:
        start = self.rng.randrange(len(self.words) - WORDS_PER_CHUNK)
        return " ".join(self.words[start : start + WORDS_PER_CHUNK])


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


def document(texts: list[str], key: str) -> tuple[repo.SourceObject, ParsedDocument, list[Chunk]]:
    chunks, offset = [], 0
    for i, text in enumerate(texts):
        chunks.append(Chunk(index=i, text=text, start_char=offset, end_char=offset + len(text), token_count=240,
                            start_turn=i, end_turn=i, speakers=("Maya",)))  # fmt: skip
        offset += len(text) + 1
    parsed = ParsedDocument(kind="transcript", format="transcript-txt", text="\n".join(texts))
    source = repo.SourceObject(tenant_id="t", project_id="bench", bucket="bench", key=key, content_sha256=key)
    return source, parsed, chunks


def bare_copy(conn, texts: list[str], vectors: np.ndarray, model_id: str) -> None:
    """The baseline: a document row and the same kind of chunk rows by a plain binary COPY, one transaction."""
    with conn.transaction():
        copy_rows(conn, texts, vectors, model_id)


def copy_rows(conn, texts: list[str], vectors: np.ndarray, model_id: str) -> None:
    """A bare document row and a binary COPY of its chunk rows, no library code around it."""
    document_id = conn.execute(
        "INSERT INTO documents (tenant_id, project_id, bucket, object_key, status) VALUES ('t', 'bench', 'bench', %s, 'raw_ingested') RETURNING id",
        (f"bare/{uuid.uuid4()}",),
    ).fetchone()[0]
    with (
        conn.cursor() as cur,
        cur.copy(f"COPY chunks ({', '.join(repo.CHUNK_COPY_COLUMNS)}) FROM STDIN WITH (FORMAT BINARY)") as copy,
    ):
        copy.set_types(repo.CHUNK_COPY_TYPES)
        offset = 0
        for i, (text, vector) in enumerate(zip(texts, vectors)):
            copy.write_row((document_id, "t", "bench", i, text, 240, offset, offset + len(text), i, i, ["Maya"],
                            None, None, [], vector, model_id))  # fmt: skip
            offset += len(text) + 1


def empty_tables(conn) -> None:
    conn.execute("TRUNCATE documents CASCADE; TRUNCATE keyword_stats")
    for table in BM25_TABLES:
        if conn.execute("SELECT to_regclass(%s)", (table,)).fetchone()[0]:
            conn.execute(f"TRUNCATE {table}")


def prefill(conn, texts: Texts, n: int, dim: int, model_id: str, make_vectors=unit_vectors) -> float:
    """--prefill rows of the model by the bulk path (which builds the HNSW index); returns seconds."""
    vectors = make_vectors(n, dim, seed=dim)
    loads = []
    for start in range(0, n, 1000):
        source, parsed, chunks = document([texts.chunk() for _ in range(min(1000, n - start))], f"prefill/{dim}/{start}")
        loads.append(DocumentLoad(source, repo.DocumentFields(), parsed, chunks, vectors[start : start + 1000]))
    started = time.perf_counter()
    bulk_load(conn, loads, model_id, dim)
    return time.perf_counter() - started


def write_path(conn, texts: Texts, rows: int, dim: int, model_id: str, seed: int) -> tuple[float, float]:
    """Alternate our path and the bare COPY, document by document; return rows/s of each."""
    ours = bare = 0.0
    # Different vectors of the same distribution for each path: inserting a vector the
    # index already holds is not the same work as inserting a new one.
    vectors = unit_vectors(rows, dim, seed=seed)
    bare_vectors = unit_vectors(rows, dim, seed=seed + 1)
    for n, start in enumerate(range(0, rows, CHUNKS_PER_DOC)):
        size = len(vectors[start : start + CHUNKS_PER_DOC])
        source, parsed, chunks = document([texts.chunk() for _ in range(size)], f"ours/{dim}/{seed}/{n}")
        bare_texts = [texts.chunk() for _ in range(size)]
        t0 = time.perf_counter()
        repo.replace_document(conn, source, repo.DocumentFields(), parsed, chunks, vectors[start : start + size], model_id)
        t1 = time.perf_counter()
        bare_copy(conn, bare_texts, bare_vectors[start : start + size], model_id)
        t2 = time.perf_counter()
        ours += t1 - t0
        bare += t2 - t1
    return rows / ours, rows / bare


def keyword_latency(conn, queries: list[str], model_id: str) -> None:
    """p50/p95 of keyword searches (top 10) over the whole project and within one of its documents."""
    from rag.search.engine import SearchScope, search_chunks

    document_id = conn.execute("SELECT id::text FROM documents WHERE object_key LIKE 'ours/%' LIMIT 1").fetchone()[0]
    for label, scope in (("project", SearchScope("t", ("bench",))), ("document", SearchScope("t", ("bench",), (document_id,)))):
        latencies = []
        for query in queries[:5]:  # warm-up, not timed
            search_chunks(conn, scope, mode="keyword", query=query, query_vector=None, model_id=model_id, dimension=0, top_k=10)
        for query in queries:
            started = time.perf_counter()
            search_chunks(conn, scope, mode="keyword", query=query, query_vector=None, model_id=model_id, dimension=0, top_k=10)
            latencies.append((time.perf_counter() - started) * 1000)
        latencies.sort()
        print(f"  keyword search within one {label}, {len(queries)} questions: p50 {latencies[len(latencies) // 2]:.1f} ms,"
              f" p95 {latencies[int(len(latencies) * 0.95)]:.1f} ms", flush=True)  # fmt: skip


def relation_bytes(conn, table: str) -> int:
    row = conn.execute("SELECT pg_total_relation_size(to_regclass(%s))", (table,)).fetchone()
    return int(row[0] or 0)


def storage(conn, dim: int, model_id: str) -> dict[str, float]:
    """Bytes per chunk: ours (chunks + indexes + BM25 tables) and a bare vector table with the same HNSW index."""
    conn.execute("VACUUM ANALYZE chunks")
    n = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    parts = {
        "chunks heap + TOAST": relation_bytes(conn, "chunks") - conn.execute("SELECT pg_indexes_size('chunks')").fetchone()[0],
        **{
            f"index {name}": size
            for name, size in conn.execute(
                "SELECT indexrelid::regclass::text, pg_relation_size(indexrelid) FROM pg_index WHERE indrelid = 'chunks'::regclass"
            ).fetchall()
        },
        **{f"BM25 table {t} (+ indexes)": relation_bytes(conn, t) for t in BM25_TABLES if relation_bytes(conn, t)},
    }
    ours = sum(parts.values())
    conn.execute("DROP TABLE IF EXISTS bare_vectors")
    conn.execute(f"CREATE TABLE bare_vectors (id bigint PRIMARY KEY, embedding vector({dim}) NOT NULL)")
    conn.execute(
        f"INSERT INTO bare_vectors SELECT id, embedding::vector({dim}) FROM chunks WHERE embedding_model = %s", (model_id,)
    )
    with conn.transaction():
        conn.execute("SET LOCAL statement_timeout = 0")
        conn.execute("SET LOCAL maintenance_work_mem = '1GB'")
        conn.execute("CREATE INDEX ON bare_vectors USING hnsw (embedding vector_cosine_ops)")
    bare_n = conn.execute("SELECT count(*) FROM bare_vectors").fetchone()[0]
    bare = relation_bytes(conn, "bare_vectors")
    conn.execute("DROP TABLE bare_vectors")
    print(f"storage, {n} chunks ({bare_n} of them of the model, vectors of {dim} d):")
    for name, size in parts.items():
        print(f"    {name:<58} {size / n:>8.0f} B/chunk")
    print(f"  ours: {ours / n:,.0f} B/chunk; bare vector table (id, vector) + HNSW: {bare / bare_n:,.0f} B/chunk;"
          f" ratio {ours / n / (bare / bare_n):.2f}x", flush=True)  # fmt: skip
    return {"ours": ours / n, "bare": bare / bare_n}


def copy_then_build(conn, texts: Texts, n: int, dim: int, model_id: str, vectors: np.ndarray) -> float:
    """The bulk baseline: bare binary COPY of n rows into the empty table without the model's index, then the build."""
    from psycopg import sql

    started = time.perf_counter()
    with conn.transaction():
        conn.execute("SET LOCAL statement_timeout = 0")
        conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(embedding_index_name("chunks", model_id, dim))))
        for start in range(0, n, 1000):
            chunk_texts = [texts.chunk() for _ in range(min(1000, n - start))]
            copy_rows(conn, chunk_texts, vectors[start : start + 1000], model_id)
        conn.execute("SET LOCAL maintenance_work_mem = '1GB'")
        conn.execute(f"SET LOCAL max_parallel_maintenance_workers = {max(1, (os.cpu_count() or 2) - 1)}")
        ensure_embedding_index(conn, "chunks", model_id, dim)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prefill", type=int, default=100_000, help="rows already in the indexed table (default 100000)")
    parser.add_argument("--rows", type=int, default=3_000, help="rows written by each path, per table state (default 3000)")
    parser.add_argument("--bulk", type=int, default=50_000, help="chunks for each bulk-path run (default 50000; 0: skip)")
    parser.add_argument(
        "--bulk-vectors", default="random,clustered", help="vector kinds of the bulk runs (default random,clustered)"
    )
    parser.add_argument("--dims", default="384", help="dimensions of the write-path runs (default 384; e.g. 384,1536)")
    parser.add_argument("--text-dir", type=Path, default=REPO_ROOT.parent / "shared" / "eval" / "transcripts",
                        help="transcripts the chunk texts are cut from (default ../shared/eval/transcripts)")  # fmt: skip
    parser.add_argument("--keyword-queries", type=int, default=100,
                        help="questions of ../shared/eval/queries.jsonl timed as keyword searches after the prefill (default 100; 0: skip)")  # fmt: skip
    args = parser.parse_args()
    texts = Texts(args.text_dir)
    queries_file = args.text_dir.parent / "queries.jsonl"
    queries = (
        [json.loads(line)["query"] for line in queries_file.read_text().splitlines() if line.strip()][: args.keyword_queries]
        if queries_file.is_file()
        else []
    )
    print(f"chunk texts: {WORDS_PER_CHUNK}-word windows of {texts.source}; os.cpu_count() = {os.cpu_count()},"
          f" load average {os.getloadavg()[0]:.1f} at start")  # fmt: skip

    with bench_database() as url, connect(url, register=False) as conn:
        migrate(conn, REPO_ROOT / "sql", {})
        from pgvector.psycopg import register_vector

        register_vector(conn)
        print(f"write path: {args.rows} rows per path, 50-chunk documents, alternating")
        print(f"{'dim':>5} {'table':<34} {'ours rows/s':>12} {'bare COPY rows/s':>17} {'ratio':>6}")
        for dim in (int(d) for d in args.dims.split(",")):
            model_id = f"bench/{dim}"
            empty_tables(conn)
            ensure_embedding_index(conn, "chunks", model_id, dim)
            ours, bare = write_path(conn, texts, args.rows, dim, model_id, seed=dim + 1)
            print(f"{dim:>5} {'empty, with HNSW index':<34} {ours:>12.0f} {bare:>17.0f} {ours / bare:>6.0%}", flush=True)
            empty_tables(conn)
            seconds = prefill(conn, texts, args.prefill, dim, model_id)
            conn.execute("VACUUM ANALYZE chunks")
            ours, bare = write_path(conn, texts, args.rows, dim, model_id, seed=dim + 3)
            label = f"{args.prefill:,} rows + HNSW index"
            print(f"{dim:>5} {label:<34} {ours:>12.0f} {bare:>17.0f} {ours / bare:>6.0%}"
                  f"   (prefill by the bulk path: {seconds:.1f} s)", flush=True)  # fmt: skip
            storage(conn, dim, model_id)
            if queries:
                keyword_latency(conn, queries, model_id)

        for name in (k for k in args.bulk_vectors.split(",") if args.bulk):
            make_vectors = {"random": unit_vectors, "clustered": clustered_vectors}[name]
            model_id = f"bench/bulk-{name}"
            empty_tables(conn)
            bare_seconds = copy_then_build(conn, texts, args.bulk, 384, model_id, make_vectors(args.bulk, 384, seed=5))
            empty_tables(conn)
            ours_seconds = prefill(conn, texts, args.bulk, 384, model_id, make_vectors)
            print(f"bulk path, {name} vectors, {args.bulk} chunks at 384 d: ours {ours_seconds:.1f} s ="
                  f" {args.bulk / ours_seconds:,.0f} chunks/s (COPY + BM25 + HNSW build); COPY then build"
                  f" {bare_seconds:.1f} s = {args.bulk / bare_seconds:,.0f} chunks/s; ratio {bare_seconds / ours_seconds:.0%}",
                  flush=True)  # fmt: skip
    print(f"load average {os.getloadavg()[0]:.1f} at the end (2 cores shared with other work)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
