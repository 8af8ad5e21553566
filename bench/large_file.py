"""How large a transcript one ingest invocation handles, per embedding provider.

    .venv/bin/python bench/large_file.py [--sizes 0.25,1,2,5] [--providers local,openai,bedrock]
        [--openai-latency-ms 500] [--bedrock-latency-ms 100] [--server postgresql://postgres@127.0.0.1:54329/postgres]

For each size, one synthetic meeting transcript (``Speaker: text`` lines of varied English
words, 60-300 characters per turn; 1 MB = 2^20 bytes, as in the 50 MB object limit) goes
through the phases of one ingest as ``rag.ingest.Ingestor`` runs them, each timed:
parse + chunk (the embedder's tokenizer and input limit), embed, and write
(``replace_document``, one transaction with binary COPY, into a throw-away database with
the migrations applied, dropped at the end). Providers:

- local: the real all-MiniLM-L6-v2 on this CPU (real timing);
- openai: the real OpenAIEmbedder against tests/embedding/fake_openai.py, each request
  answered no sooner than --openai-latency-ms after it arrives (ASSUMED latency; the SDK
  sends batches of embedding_batch_size texts one after the other);
- bedrock: the real BedrockEmbedder with a stub client whose invoke_model sleeps
  --bedrock-latency-ms per text (ASSUMED latency) and returns a Titan V2 body of 1024
  floats; the embedder overlaps PARALLEL_CALLS calls.

The ingest Lambda has 120 s; the last column extrapolates linearly from each row's cost
per MB how large a file fits in 96 s (20% headroom). S3 fetch, hashing and the version
checks are not counted (milliseconds). Progress goes to stderr, the table to stdout.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import PurePosixPath
from random import Random
from typing import Any

import numpy as np
import psycopg
from psycopg.conninfo import make_conninfo

from rag.chunking import chunk_document
from rag.config import REPO_ROOT, Settings
from rag.embedding import get_embedder
from rag.embedding.base import Embedder
from rag.embedding.bedrock import PARALLEL_CALLS, BedrockEmbedder
from rag.embedding.index_text import IndexTextEmbedder
from rag.parsing import parse_document
from rag.store import documents as repo
from rag.store.connection import connect
from rag.store.migrations import migrate_database

sys.path.insert(0, str(REPO_ROOT))
from tests.embedding.fake_openai import FakeOpenAI  # noqa: E402

MB = 1024 * 1024
BUDGET_S = 96.0  # the ingest function's 120 s timeout less 20% headroom
SPEAKERS = ["Alice Chen", "Bob Martinez", "Priya Natarajan", "Tom O'Brien", "Project Manager", "Speaker 3"]
WORDS = """
the a we I you it they this that so and but or if then because about also just really maybe
project budget timeline deadline customer release feature roadmap estimate migration database
schema index query latency throughput deployment pipeline review meeting action item owner
decide decided agree disagree propose suggest think guess need want should could would might
next week tomorrow Friday quarter month sprint planning retrospective backlog priority risk
opportunity marketing sales revenue contract invoice vendor legal compliance security audit
design prototype user interface dashboard report analytics metric survey feedback interview
hire onboarding training documentation support ticket incident outage postmortem rollback
cost savings forecast headcount approval sign-off stakeholder sponsor steering committee
performance regression benchmark experiment hypothesis result evidence baseline variance
integration vendor's API authentication permissions tenant region storage bucket encryption
probably definitely honestly basically actually obviously unfortunately fortunately quickly
Kubernetes PostgreSQL embeddings transcript summarisation multilingual reconciliation
""".split()


def synthetic_transcript(size_bytes: int, seed: int = 11) -> bytes:
    """Meeting-like ``Speaker: text`` lines totalling about ``size_bytes``."""
    rng = Random(seed)
    lines: list[str] = []
    total = 0
    while total < size_bytes:
        target, words = rng.randint(60, 300), []
        length = 0
        while length < target:
            word = rng.choice(WORDS)
            if not words or words[-1].endswith((".", "?")):
                word = word[0].upper() + word[1:]
            if rng.random() < 0.1:
                word += rng.choice([".", ".", "?", ","])
            words.append(word)
            length += len(word) + 1
        line = f"{rng.choice(SPEAKERS)}: {' '.join(words).rstrip(',.?')}."
        lines.append(line)
        total += len(line.encode()) + 1
    return "\n".join(lines).encode() + b"\n"


class SlowFakeOpenAI(FakeOpenAI):
    """The fake OpenAI server, every response held until ``latency_s`` after its request arrived."""

    def __init__(self, latency_s: float, dimension: int):
        super().__init__(dimension)
        fast = self.server.RequestHandlerClass

        class Slow(fast):  # type: ignore[valid-type,misc]
            def do_POST(self) -> None:
                self.answer_at = time.perf_counter() + latency_s
                super().do_POST()

            def _send(self, *args: Any, **kwargs: Any) -> None:
                time.sleep(max(0.0, self.answer_at - time.perf_counter()))
                super()._send(*args, **kwargs)

        self.server.RequestHandlerClass = Slow


class StubBedrock:
    """A bedrock-runtime client whose invoke_model takes ``latency_s`` and answers like Titan V2."""

    def __init__(self, latency_s: float):
        self.latency_s = latency_s

    def invoke_model(self, *, modelId: str, body: str, contentType: str, accept: str) -> dict[str, Any]:
        request = json.loads(body)
        time.sleep(self.latency_s)
        vector = np.random.default_rng().standard_normal(request["dimensions"])
        vector /= np.linalg.norm(vector)
        payload = {"embedding": vector.tolist(), "inputTextTokenCount": len(request["inputText"].split())}
        return {"body": io.BytesIO(json.dumps(payload).encode()), "contentType": "application/json"}


@contextmanager
def embedders(args: argparse.Namespace) -> Iterator[dict[str, tuple[Settings, Embedder]]]:
    """Each requested provider's settings and embedder, as the ingest handler would get them."""
    chosen: dict[str, tuple[Settings, Embedder]] = {}
    with SlowFakeOpenAI(args.openai_latency_ms / 1000, 1536) as fake:
        for provider in args.providers:
            if provider == "local":
                settings = Settings(embedding_provider="local")
                chosen[provider] = (settings, get_embedder(settings))
            elif provider == "openai":
                os.environ["OPENAI_API_KEY"] = "sk-bench-fake"  # the fake's; never a real key
                settings = Settings(embedding_provider="openai", openai_base_url=fake.base_url, openai_api_key_secret=None)
                chosen[provider] = (settings, get_embedder(settings))
            elif provider == "bedrock":
                settings = Settings(embedding_provider="bedrock")
                stub = StubBedrock(args.bedrock_latency_ms / 1000)
                chosen[provider] = (settings, IndexTextEmbedder(BedrockEmbedder(settings, client=stub)))
            else:
                raise SystemExit(f"unknown provider {provider!r}: expected local, openai or bedrock")
        yield chosen


@contextmanager
def fresh_database(server: str) -> Iterator[str]:
    name = f"rag_bench_large_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield make_conninfo(server, dbname=name)
    finally:
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@dataclass
class Row:
    provider: str
    mb: float
    chunks: int
    parse_chunk: float
    embed: float
    write: float

    @property
    def total(self) -> float:
        return self.parse_chunk + self.embed + self.write

    @property
    def fits_mb(self) -> float:
        return self.mb * BUDGET_S / self.total


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - started


def ingest_once(conn: psycopg.Connection, provider: str, settings: Settings, embedder: Embedder, mb: float) -> Row:
    """One file through the phases of ``Ingestor._prepare`` and ``replace_document``, each timed."""
    data = synthetic_transcript(int(mb * MB))
    key = f"projects/bench/{provider}-{mb}mb-{uuid.uuid4().hex[:6]}.txt"
    max_tokens = min(settings.ingest.chunk_tokens, embedder.max_input_tokens)

    def parse_and_chunk() -> tuple[Any, Any]:
        parsed = parse_document(data, PurePosixPath(key).name)
        return parsed, chunk_document(parsed, embedder.count_tokens, max_tokens, settings.ingest.chunk_overlap_tokens)

    log(f"{provider} {mb} MB: parse + chunk ({max_tokens} tokens max)")
    (parsed, chunks), t_chunk = timed(parse_and_chunk)
    log(f"{provider} {mb} MB: embed {len(chunks)} chunks")
    vectors, t_embed = timed(lambda: embedder.embed([chunk.text for chunk in chunks]))
    source = repo.SourceObject(tenant_id="bench", project_id="bench", bucket="bench", key=key)
    fields = repo.DocumentFields(title=PurePosixPath(key).stem, participants=sorted({t.speaker for t in parsed.turns}))
    log(f"{provider} {mb} MB: write")
    _, t_write = timed(
        lambda: repo.replace_document(
            conn, source, fields, parsed, chunks, vectors, embedder.model_id,
            statement_timeout_ms=settings.database.write_statement_timeout_ms,
        )
    )  # fmt: skip
    row = Row(provider, mb, len(chunks), t_chunk, t_embed, t_write)
    log(f"{provider} {mb} MB: {row.total:.1f} s")
    return row


def log(message: str) -> None:
    print(f"[large_file] {message}", file=sys.stderr, flush=True)


def table(rows: list[Row], args: argparse.Namespace) -> str:
    assumed = {"openai": "*", "bedrock": "†"}
    lines = [
        "| provider | file MB | chunks | parse+chunk s | embed s | write s | total s | largest file in 96 s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        mark = assumed.get(r.provider, "")
        lines.append(
            f"| {r.provider} | {r.mb:g} | {r.chunks:,} | {r.parse_chunk:.1f} | {r.embed:.1f}{mark} | {r.write:.1f} "
            f"| {r.total:.1f}{mark} | {r.fits_mb:.1f} MB{mark} |"
        )
    lines.append("")
    lines.append("Local timings are real. Write = one replace_document into a fresh, migrated database.")
    if "openai" in args.providers:
        lines.append(
            f"\\* ASSUMED latency: {args.openai_latency_ms:g} ms per OpenAI request of up to "
            f"{Settings().embedding.batch_size} texts (fake server on localhost), requests sent one after another."
        )
    if "bedrock" in args.providers:
        lines.append(
            f"† ASSUMED latency: {args.bedrock_latency_ms:g} ms per Bedrock InvokeModel (one text each, stub client), "
            f"{PARALLEL_CALLS} calls in parallel."
        )
    lines.append("Largest file: linear in size from that row's seconds per MB, 96 s = 120 s Lambda timeout less 20%.")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="0.25,1,2,5", help="transcript sizes in MB, comma separated")
    parser.add_argument("--providers", default="local,openai,bedrock", help="comma separated subset")
    parser.add_argument("--openai-latency-ms", type=float, default=500.0, help="assumed time per OpenAI request")
    parser.add_argument("--bedrock-latency-ms", type=float, default=100.0, help="assumed time per Bedrock call")
    parser.add_argument("--server", default="postgresql://postgres@127.0.0.1:54329/postgres", help="PostgreSQL server")
    args = parser.parse_args()
    args.providers = [p.strip() for p in args.providers.split(",") if p.strip()]
    sizes = [float(s) for s in args.sizes.split(",")]

    rows: list[Row] = []
    with embedders(args) as chosen, fresh_database(args.server) as url:
        for settings, _ in chosen.values():
            migrate_database(settings, url)  # the schema and each model's HNSW index
        with connect(url) as conn:
            for provider, (settings, embedder) in chosen.items():
                log(f"{provider}: warming up {embedder.model_id} (not timed)")
                embedder.embed(["warm up"])
                rows.extend(ingest_once(conn, provider, settings, embedder, mb) for mb in sizes)
    print(table(rows, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
