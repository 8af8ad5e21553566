"""`rag backfill`: the stage handlers of functions/backfill/handler.py driven locally, with progress bars;
and `rag up`'s backfill after ingest (``follow_ingest``)."""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rag.config import Settings

if TYPE_CHECKING:  # the store (and psycopg) loads only when a backfill runs
    from rag.store.backfill_queue import StageName

logger = logging.getLogger("rag.backfill")
STAGES: tuple[StageName, ...] = ("segment", "embed", "extract")


def quiet_powertools() -> None:
    """Locally the handlers' EMF metrics, X-Ray and info logs would only clutter the terminal."""
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")


def run_backfill(
    settings: Settings,
    stages: Sequence[StageName],
    *,
    batch_size: int = 10,
    until_complete: bool = False,
    limit: int | None = None,
    progress: bool = True,
) -> int:
    """Each stage in order: batches through its handler until done (or one batch, or ``limit`` documents)."""
    from tqdm import tqdm

    from rag.store.backfill_queue import count_remaining
    from rag.store.connection import connect, resolve_database_url
    from rag_local.state_machine import stage_handlers

    quiet_powertools()
    handlers = stage_handlers()
    failed_any = False
    for stage in stages:
        with connect(resolve_database_url(settings)) as conn:
            pending = count_remaining(conn, stage, settings.embedding.model_id)
        budget = min(pending, limit) if limit is not None else pending
        total = budget if until_complete else min(budget, batch_size)
        previous: dict[str, Any] = {}
        with tqdm(total=total, desc=f"{stage:<8}", unit="doc", disable=not progress, file=sys.stderr) as bar:
            while True:
                handled = previous.get("processed_total", 0) + previous.get("failed_total", 0)
                size = batch_size if limit is None else min(batch_size, limit - handled)
                if size <= 0:
                    break
                previous = handlers[stage]({"stage": stage, "batch_size": size, "previous": previous})
                bar.update(previous["processed"] + previous["failed"])
                done = previous["processed"] + previous["failed"] == 0  # all left are locked by another runner
                if not until_complete or previous["remaining"] == 0 or done:
                    break
        failed_any |= previous.get("failed_total", 0) > 0
        print(
            f"{stage:<8} {previous.get('processed_total', 0)} processed, {previous.get('failed_total', 0)} failed, "
            f"{previous.get('remaining', pending)} remaining"
        )
    if failed_any:
        print("some documents failed: see `rag status` for their errors", file=sys.stderr)
    return 1 if failed_any else 0


def run_backfill_in_state_machine(stages: Sequence[StageName], batch_size: int, max_iterations: int) -> int:
    """The CDK-synthesized state machine executed by moto, its tasks dispatched to the same handlers."""
    from rag_local.state_machine import run_backfill_state_machine

    quiet_powertools()
    execution = run_backfill_state_machine({"stages": list(stages), "batch_size": batch_size, "max_iterations": max_iterations})
    # A run whose stage failed ends Failed: its cause carries the errors and the results so far.
    output = execution.get("output_json") or execution.get("cause_json") or {}
    print(f"execution {execution['status']}")
    for stage, result in output.get("results", {}).items():
        held = " (the rest held by another runner)" if result.get("idle_batches") and result["remaining"] else ""
        print(
            f"{stage:<8} {result['processed_total']} processed, {result['failed_total']} failed, "
            f"{result['remaining']} remaining after {result['iteration']} iterations{held}"
        )
    for stage, error in output.get("errors", {}).items():
        print(f"{stage:<8} FAILED {error.get('Error')}: {error.get('Cause')}", file=sys.stderr)
    if execution["status"] != "SUCCEEDED":
        shown = ("error",) if execution.get("cause_json") else ("error", "cause")  # a JSON cause is printed above
        print(json.dumps({k: v for k, v in execution.items() if k in shown}), file=sys.stderr)
    failed = (
        execution["status"] != "SUCCEEDED"
        or output.get("errors")
        or any(r["failed_total"] for r in output.get("results", {}).values())
    )
    return 1 if failed else 0


def follow_ingest(settings: Settings, wanted: threading.Event, stop: threading.Event) -> None:
    """`rag up`'s backfill: each time ``wanted`` is set (the worker delivered a batch), every stage until nothing
    is pending, until ``stop``. A `rag backfill` running meanwhile shares the work (each claims other documents)."""
    while not stop.is_set():
        if not wanted.wait(timeout=1):
            continue
        wanted.clear()
        try:
            if pending(settings):
                run_backfill(settings, list(STAGES), until_complete=True, progress=False)
        except Exception:  # the next batch tries again; the worker must keep ingesting
            logger.exception("the backfill after ingest failed; it runs again after the next batch")


def pending(settings: Settings) -> int:
    """Documents any stage has still to do."""
    from rag.store.backfill_queue import count_remaining
    from rag.store.connection import connect, resolve_database_url

    with connect(resolve_database_url(settings)) as conn:
        return sum(count_remaining(conn, stage, settings.embedding.model_id) for stage in STAGES)
