"""End-to-end ingest benchmark with the local model, time split into parse+chunk, embed and write.

    .venv/bin/python bench/ingest_e2e.py [--transcripts ../shared/eval/transcripts]

Every ``<project>/<meeting>.txt`` below the folder goes through the same library calls
as the ingest handler (parse, chunk with the model's tokenizer, embed in batches, one
transaction per document with binary COPY) into a throw-away database.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import bench_database  # noqa: E402
from rag.chunking import chunk_document  # noqa: E402
from rag.config import Settings  # noqa: E402
from rag.embedding import get_embedder  # noqa: E402
from rag.parsing import parse_document  # noqa: E402
from rag.store import documents as repo  # noqa: E402
from rag.store.connection import connect  # noqa: E402
from rag.store.migrations import migrate_database  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transcripts", type=Path, default=Path("../shared/eval/transcripts"))
    args = parser.parse_args()
    files = sorted(args.transcripts.glob("*/*.txt"))
    if not files:
        print(f"no <project>/<meeting>.txt files under {args.transcripts}", file=sys.stderr)
        return 1

    settings = Settings()
    embedder = get_embedder(settings)
    load_started = time.perf_counter()
    embedder.embed(["warm up"])
    load_seconds = time.perf_counter() - load_started
    max_tokens = min(settings.ingest.chunk_tokens, embedder.max_input_tokens)
    timings = {"parse+chunk": 0.0, "embed": 0.0, "write": 0.0}
    n_chunks = n_turns = 0
    with bench_database() as url:
        migrate_database(settings, url)
        with connect(url) as conn:
            for path in files:
                t0 = time.perf_counter()
                parsed = parse_document(path.read_bytes(), path.name)
                chunks = chunk_document(parsed, embedder.count_tokens, max_tokens, settings.ingest.chunk_overlap_tokens)
                t1 = time.perf_counter()
                vectors = embedder.embed([c.text for c in chunks])
                t2 = time.perf_counter()
                source = repo.SourceObject(
                    tenant_id="bench", project_id=path.parent.name, bucket="bench", key=f"projects/{path.parent.name}/{path.name}"
                )
                repo.replace_document(
                    conn, source, repo.DocumentFields(title=path.stem), parsed, chunks, vectors, embedder.model_id
                )
                t3 = time.perf_counter()
                timings["parse+chunk"] += t1 - t0
                timings["embed"] += t2 - t1
                timings["write"] += t3 - t2
                n_chunks += len(chunks)
                n_turns += len(parsed.turns)
                print(f"  {path.parent.name}/{path.name}: {len(parsed.turns)} turns, {len(chunks)} chunks", flush=True)
    total = sum(timings.values())
    print(
        f"\n{len(files)} transcripts, {n_turns} turns, {n_chunks} chunks (max {max_tokens} tokens, overlap {settings.ingest.chunk_overlap_tokens})"
    )
    print(f"model load {load_seconds:.1f} s (once per process, not counted below)")
    for stage, seconds in timings.items():
        print(f"  {stage:<12} {seconds:7.1f} s  {seconds / total:5.1%}")
    print(f"  {'total':<12} {total:7.1f} s  = {n_chunks / total:.1f} chunks/s, {len(files) / total:.2f} transcripts/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
