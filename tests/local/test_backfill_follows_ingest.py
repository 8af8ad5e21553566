"""Locally the backfill follows ingest too: `rag up`'s worker wakes it, and `rag backfill` runs until nothing is pending."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.backfill.conftest import ingest_file

BACKFILL_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "backfill"
FILES = [BACKFILL_FIXTURES / "transcripts" / "scanner_rollout_sync.txt", BACKFILL_FIXTURES / "documents" / "release_process.md"]

pytestmark = pytest.mark.slow


def statuses(db) -> list[str]:
    return sorted(row[0] for row in db.execute("SELECT status FROM documents"))


def test_rag_backfill_without_options_runs_every_stage_until_nothing_is_pending(db, local_embedder, capsys):
    from rag_local.cli import main

    for path in FILES:
        ingest_file(db, path, local_embedder)

    assert main(["backfill", "--batch-size", "1"]) == 0

    out = capsys.readouterr()
    assert "segment  2 processed, 0 failed, 0 remaining" in out.out
    assert "extract  2 processed, 0 failed, 0 remaining" in out.out
    assert "segment : 100%" in out.err and "2/2" in out.err  # progress over everything pending
    assert statuses(db) == ["extracted", "extracted"]


def test_rag_backfill_one_batch_stops_after_one_batch_per_stage(db, local_embedder, capsys):
    from rag_local.cli import main

    for path in FILES:
        ingest_file(db, path, local_embedder)

    assert main(["backfill", "--one-batch", "--batch-size", "1", "--quiet"]) == 0

    out = capsys.readouterr().out
    assert "segment  1 processed, 0 failed, 1 remaining" in out
    assert "extract  1 processed, 0 failed, 0 remaining" in out  # only the one segmented and embedded
    assert statuses(db) == ["extracted", "raw_ingested"]


def test_the_worker_s_backfill_runs_every_stage_after_a_batch_and_waits_for_the_next(db, local_embedder):
    from rag.config import get_settings
    from rag_local.backfill import follow_ingest

    ingest_file(db, FILES[0], local_embedder)
    wanted, stop = threading.Event(), threading.Event()
    thread = threading.Thread(target=follow_ingest, args=(get_settings(), wanted, stop), daemon=True)
    thread.start()
    try:
        time.sleep(1.5)  # not woken: nothing done
        assert statuses(db) == ["raw_ingested"]

        wanted.set()  # the worker delivered a batch
        wait_until(lambda: statuses(db) == ["extracted"])

        ingest_file(db, FILES[1], local_embedder)
        wanted.set()
        wait_until(lambda: statuses(db) == ["extracted", "extracted"])
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not thread.is_alive()


def wait_until(condition, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.2)
