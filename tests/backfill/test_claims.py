"""Claiming and batches: SKIP LOCKED, a crash before the commit, concurrent runners, per-document errors."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from rag.backfill.documents import claim_batch, reset_attempts
from rag.backfill.errors import TransientError
from rag.backfill.runner import run_stage
from rag.backfill.segment import SegmentStage
from rag.errors import EmbeddingError
from rag.store.backfill_queue import MAX_ATTEMPTS, count_remaining
from rag.store.connection import connect
from tests.backfill.conftest import ingest_file


class Crash(BaseException):
    """Stands for the process dying mid-batch (not an Exception: nothing inside catches it)."""


class RecordingStage(SegmentStage):
    """The real segment stage, recording which documents it processed and failing where told."""

    def __init__(self, settings, embedder, *, fail_on=(), transient_on=(), crash_on=(), pause: threading.Event | None = None):
        super().__init__(settings, embedder)
        self.processed: list = []
        self.fail_on, self.transient_on, self.crash_on = set(fail_on), set(transient_on), set(crash_on)
        self.pause = pause

    def process(self, conn, document):
        if document.id in self.crash_on:
            raise Crash
        if document.id in self.fail_on:
            raise ValueError(f"cannot segment {document.title}")
        if document.id in self.transient_on:
            raise EmbeddingError("embedding API unreachable")
        super().process(conn, document)
        self.processed.append(document.id)
        if self.pause is not None:
            self.pause.wait(0.05)  # keep the batch open a moment so the runners overlap


def markdown_documents(db, embedder, tmp_path: Path, count: int) -> list:
    ids = []
    for i in range(count):
        path = tmp_path / f"handbook-{i:02d}.md"
        path.write_text(f"# Handbook {i}\n\nIntro {i}.\n\n## Rules\n\nRule number {i} applies to everyone.\n")
        ids.append(ingest_file(db, path, embedder, key=f"projects/orion/{path.name}"))
    return ids


def statuses(db) -> dict:
    return dict(db.execute("SELECT id, status FROM documents").fetchall())


def test_a_claimed_batch_is_skipped_by_others_and_released_by_a_crash(db, database_url, local_embedder, settings, tmp_path):
    ids = markdown_documents(db, local_embedder, tmp_path, 3)
    first = connect(database_url)
    try:
        first.execute("BEGIN")
        claimed = claim_batch(first, "segment", local_embedder.model_id, 10)
        assert sorted(d.id for d in claimed) == sorted(ids)
        with connect(database_url) as second, second.transaction():
            assert claim_batch(second, "segment", local_embedder.model_id, 10) == []  # SKIP LOCKED
        # The first runner's process dies: the server ends its session, and with it the locks.
        pid = first.info.backend_pid
        db.execute("SELECT pg_terminate_backend(%s, 10000)", (pid,))  # waits until the session has ended
        assert db.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()[0] == 0
    finally:
        first.close()
    result = run_stage(db, SegmentStage(settings, local_embedder), 10)
    assert (result.processed, result.failed, result.remaining) == (3, 0, 0)
    assert set(statuses(db).values()) == {"segmented"}


def test_a_crash_between_claim_and_commit_leaves_the_whole_batch_claimable(db, local_embedder, settings, tmp_path):
    ids = markdown_documents(db, local_embedder, tmp_path, 3)
    crashing = RecordingStage(settings, local_embedder, crash_on={ids[2]})
    with pytest.raises(Crash):
        run_stage(db, crashing, 10)
    assert len(crashing.processed) == 2  # two documents were done in the transaction ...
    assert set(statuses(db).values()) == {"raw_ingested"}  # ... and none of it was committed
    assert db.execute("SELECT count(*) FROM segments").fetchone()[0] == 0

    again = RecordingStage(settings, local_embedder)
    result = run_stage(db, again, 10)
    assert sorted(again.processed) == sorted(ids) and result.remaining == 0
    assert db.execute("SELECT count(DISTINCT document_id) FROM segments").fetchone()[0] == 3


def test_two_concurrent_runners_never_process_the_same_document(db, database_url, local_embedder, settings, tmp_path):
    ids = markdown_documents(db, local_embedder, tmp_path, 12)
    pause = threading.Event()
    stages = [RecordingStage(settings, local_embedder, pause=pause) for _ in range(2)]
    start = threading.Barrier(2)
    errors = []

    def runner(stage):
        try:
            with connect(database_url) as conn:
                start.wait()
                while run_stage(conn, stage, 2).remaining:
                    pass
        except Exception as exc:  # surfaced below: a thread's exception would otherwise vanish
            errors.append(exc)

    threads = [threading.Thread(target=runner, args=(stage,)) for stage in stages]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    first, second = (set(stage.processed) for stage in stages)
    assert len(stages[0].processed) + len(stages[1].processed) == 12  # nobody processed a document twice
    assert first.isdisjoint(second) and first | second == set(ids)
    assert set(statuses(db).values()) == {"segmented"}
    duplicates = db.execute(
        "SELECT document_id, segment_index, count(*) FROM segments GROUP BY 1, 2 HAVING count(*) > 1"
    ).fetchall()
    assert duplicates == []


def test_a_document_error_is_recorded_and_the_batch_goes_on(db, local_embedder, settings, tmp_path):
    ids = markdown_documents(db, local_embedder, tmp_path, 3)
    bad = ids[1]
    stage = RecordingStage(settings, local_embedder, fail_on={bad})
    failures = []

    result = run_stage(db, stage, 10, on_document=lambda document, error: error and failures.append((document.id, error)))

    assert (result.processed, result.failed, result.remaining) == (2, 1, 1)  # the bad one may be retried
    assert failures == [(bad, "cannot segment handbook-01")]
    row = db.execute("SELECT status, backfill_error, backfill_attempts FROM documents WHERE id = %s", (bad,)).fetchone()
    assert row == ("raw_ingested", "segment: ValueError: cannot segment handbook-01", 1)
    assert db.execute("SELECT count(*) FROM segments WHERE document_id = %s", (bad,)).fetchone()[0] == 0

    for _ in range(MAX_ATTEMPTS - 1):
        run_stage(db, stage, 10)
    # Out of attempts: no longer claimed, no longer counted as remaining, still visible with its error.
    assert count_remaining(db, "segment", local_embedder.model_id) == 0
    assert run_stage(db, stage, 10).processed == 0
    assert reset_attempts(db) == 1
    assert run_stage(db, RecordingStage(settings, local_embedder), 10).processed == 1
    row = db.execute("SELECT status, backfill_error, backfill_attempts FROM documents WHERE id = %s", (bad,)).fetchone()
    assert row == ("segmented", None, 0)


def test_a_transient_error_rolls_the_batch_back_and_is_raised_for_a_retry(db, local_embedder, settings, tmp_path):
    ids = markdown_documents(db, local_embedder, tmp_path, 2)
    stage = RecordingStage(settings, local_embedder, transient_on={ids[1]})
    with pytest.raises(TransientError, match="segment batch rolled back.*embedding API unreachable"):
        run_stage(db, stage, 10)
    assert set(statuses(db).values()) == {"raw_ingested"}
    errors = db.execute("SELECT backfill_error, backfill_attempts FROM documents").fetchall()
    assert errors == [(None, 0), (None, 0)]  # not the documents' fault: nothing recorded against them
