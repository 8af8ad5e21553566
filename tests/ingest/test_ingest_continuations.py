"""A file too large for one invocation: embedded over several (``ingest_checkpoints``), whatever else runs.

Chains of invocations can run twice for one file (S3 delivers an event twice; a batch times out
after its continuation was sent, so the original message comes back): they share their progress,
neither fails, and no chain clears the progress of another version.
Real PostgreSQL, moto S3 (versioned, as the CDK bucket is), the real local model.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from rag.errors import ContinueLater
from rag.events import ObjectChange
from rag.ingest import Ingestor
from tests.ingest.s3_hooks import S3WithHook

pytestmark = pytest.mark.slow

BUCKET = "rag-continuation-bucket"
KEY = "tenants/acme/projects/ops/2026-11-20-migration.txt"
BATCH = 4
LONG_MEETING = "\n".join(
    f"{speaker}: Point {i} of the migration plan covers scanners, firmware and the warehouse cutover window."
    for i, speaker in zip(range(24), ["Ana", "Ben", "Chloe"] * 8)
).encode()
OTHER_MEETING = "\n".join(
    f"{speaker}: Item {i} of the budget review covers freight, customs and the spare parts stock."
    for i, speaker in zip(range(24), ["Dara", "Eli"] * 12)
).encode()


class CountingEmbedder:
    """The real local model, counting the texts it is asked to embed; ``after_embed`` runs after each call."""

    def __init__(self, embedder: Any):
        self._embedder = embedder
        self._lock = threading.Lock()
        self.texts = 0
        self.after_embed: Any = None

    def embed(self, texts: list[str]) -> list[list[float]]:
        with self._lock:  # one model, called from racing threads
            self.texts += len(texts)
            vectors = self._embedder.embed(texts)
        if self.after_embed:
            self.after_embed()
        return vectors  # type: ignore[no-any-return]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._embedder, name)


@pytest.fixture
def embedder(local_embedder) -> CountingEmbedder:
    return CountingEmbedder(local_embedder)


@pytest.fixture
def ingestor(s3, db, embedder) -> Ingestor:
    """Small chunks and embedding batches, so a file takes several batches."""
    from rag.config import get_settings
    from rag.store.connection import connection

    settings = get_settings().with_values(chunk_tokens=32, chunk_overlap_tokens=0, embedding_batch_size=BATCH)
    return Ingestor(lambda: connection(settings), S3WithHook(s3), embedder, settings)


def out_of_time(ingestor: Ingestor, key: str = KEY) -> str:
    """One invocation whose embedding budget is already spent: "continued", or the outcome it wrote."""
    try:
        return ingestor.apply(ObjectChange("created", BUCKET, key), embed_until=time.monotonic() - 1).outcome
    except ContinueLater as progress:
        assert "chunks embedded" in str(progress)
        return "continued"


def run_chain(ingestor: Ingestor, key: str = KEY) -> tuple[str, int]:
    """Invocations one after another until one writes: (its outcome, how many invocations)."""
    for invocations in range(1, 50):
        if (outcome := out_of_time(ingestor, key)) != "continued":
            return outcome, invocations
    raise AssertionError("the chain never finished")


def checkpoints(db) -> list[tuple[str, int]]:
    return db.execute("SELECT content_sha256, chunk_index FROM ingest_checkpoints ORDER BY 1, 2").fetchall()


def chunk_count(db) -> int:
    return db.execute("SELECT count(*) FROM chunks").fetchone()[0]  # type: ignore[no-any-return]


def test_a_file_too_large_for_one_invocation_is_embedded_over_several_without_repeating_work(s3, ingestor, embedder, db):
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=LONG_MEETING)

    # WHEN invocations run out of time one after another
    invocations = 0
    while (outcome := out_of_time(ingestor)) == "continued":
        invocations += 1
        assert len(checkpoints(db)) == BATCH * invocations  # one batch more each time, kept between invocations
        assert invocations < 50

    # THEN the last one writes the whole document, each chunk embedded once, and the progress is gone
    chunks = chunk_count(db)
    assert outcome == "ingested" and chunks > 2 * BATCH
    assert invocations + 1 == -(-chunks // BATCH)  # one batch per invocation
    assert embedder.texts == chunks
    assert checkpoints(db) == []


def test_two_chains_racing_on_one_key_share_their_progress_and_neither_fails(s3, ingestor, embedder, db):
    # GIVEN S3 delivered the creation twice: two invocations start on the file at once
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=LONG_MEETING)
    both_embedded = threading.Barrier(2, timeout=60)
    embedder.after_embed = both_embedded.wait  # both loaded no progress and embedded the same first batch
    outcomes: list[str] = []

    def chain() -> None:
        try:
            outcomes.append(out_of_time(ingestor))
        except Exception as exc:  # reported, so the assertion shows it
            outcomes.append(repr(exc))

    # WHEN both save their progress
    threads = [threading.Thread(target=chain) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    # THEN neither failed, and the first batch is saved once
    assert outcomes == ["continued", "continued"]
    assert db.execute("SELECT count(*) FROM documents").fetchone() == (0,)
    assert [index for _, index in checkpoints(db)] == list(range(BATCH))

    # AND the next invocation goes on from there: nothing embedded a third time
    embedder.after_embed = None
    embedder.texts = 0
    outcome, _ = run_chain(ingestor)
    assert outcome == "ingested"
    assert embedder.texts == chunk_count(db) - BATCH
    assert checkpoints(db) == []


def test_a_continuation_and_a_redelivery_of_it_embedding_the_same_batch_both_go_on(s3, ingestor, embedder, db):
    # GIVEN a chain that saved its first batch, and its continuation message running...
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=LONG_MEETING)
    assert out_of_time(ingestor) == "continued"
    outcomes: dict[str, str] = {}

    def redelivered_meanwhile() -> None:
        # ...while the batch that sent it timed out: the same message comes back and runs too,
        # loading the same progress, embedding the same batch and saving it first.
        embedder.after_embed = None
        outcomes["redelivered"] = out_of_time(ingestor)

    embedder.after_embed = redelivered_meanwhile

    # WHEN the continuation saves what it embedded
    outcomes["continuation"] = out_of_time(ingestor)

    # THEN both go on, and the progress holds two batches, each chunk once
    assert outcomes == {"redelivered": "continued", "continuation": "continued"}
    assert db.execute("SELECT count(*) FROM documents").fetchone() == (0,)
    assert [index for _, index in checkpoints(db)] == list(range(2 * BATCH))

    # AND both chains end: one writes the document, the other finds it written
    first, _ = run_chain(ingestor)
    second, invocations = run_chain(ingestor)
    assert (first, second, invocations) == ("ingested", "unchanged", 1)
    assert db.execute("SELECT status FROM documents").fetchall() == [("raw_ingested",)]
    assert checkpoints(db) == []


def test_a_chain_that_fails_keeps_the_progress_of_a_newer_version(s3, ingestor, embedder, db):
    import hashlib

    # GIVEN a file that cannot be parsed, whose invocation checked it is still S3's current version...
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00")

    def newer_version_starts() -> None:
        # ...when a new version is uploaded and its first invocation saves a batch
        s3.put_object(Bucket=BUCKET, Key=KEY, Body=LONG_MEETING)
        assert out_of_time(ingestor) == "continued"

    ingestor.s3.after_head = newer_version_starts

    # WHEN the failing invocation records its failure
    assert out_of_time(ingestor) == "failed"

    # THEN the newer version's progress is still there, and its chain goes on from it
    newer = hashlib.sha256(LONG_MEETING).hexdigest()
    assert checkpoints(db) == [(newer, index) for index in range(BATCH)]
    embedder.texts = 0
    outcome, _ = run_chain(ingestor)
    assert outcome == "ingested" and embedder.texts == chunk_count(db) - BATCH


def test_the_progress_of_a_replaced_version_goes_when_the_current_one_is_written(s3, ingestor, db):
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=LONG_MEETING)
    assert out_of_time(ingestor) == "continued"
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=OTHER_MEETING)

    outcome, _ = run_chain(ingestor)

    assert outcome == "ingested"
    assert checkpoints(db) == []


def test_a_unique_violation_from_a_concurrent_writer_is_retried_not_a_failed_file(s3, ingestor, db, monkeypatch):
    import psycopg

    from rag.errors import is_transient
    from rag.store import checkpoints as store

    # GIVEN a concurrent writer that saved the same rows first, and a save that is not idempotent
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=LONG_MEETING)
    real_save = store.save

    def save_twice(conn: psycopg.Connection, *args: Any) -> None:
        real_save(conn, *args)
        with conn.transaction():
            conn.execute("INSERT INTO ingest_checkpoints SELECT * FROM ingest_checkpoints LIMIT 1")

    monkeypatch.setattr(store, "save", save_twice)

    # WHEN the invocation meets the unique violation
    with pytest.raises(Exception) as raised:
        out_of_time(ingestor)

    # THEN it is retried (with backoff), not recorded as a failed file
    assert is_transient(raised.value)
    assert isinstance(raised.value.__cause__ or raised.value, psycopg.errors.UniqueViolation)
    assert db.execute("SELECT count(*) FROM documents").fetchone() == (0,)
