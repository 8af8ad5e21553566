"""What a stage Lambda receives from and returns to the state machine's loop.

The loop counts its iterations through the handler: it passes the previous result in
(``previous``) and gets ``iteration + 1`` and running totals back, so the definition
needs only plain Choice rules (no intrinsic arithmetic). ``idle_batches`` counts the
batches in a row that claimed nothing although documents remained: another runner holds
them (``FOR UPDATE SKIP LOCKED``); the loop waits between such batches and, after a few,
leaves the rest to that runner.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

MAX_BATCH_SIZE = 500


@dataclass(frozen=True)
class StageResult:
    """One batch: documents moved on, documents whose error was recorded, documents still to do."""

    processed: int
    failed: int
    remaining: int


@dataclass(frozen=True)
class StageProgress:
    iteration: int
    processed: int
    failed: int
    remaining: int
    idle_batches: int  # batches in a row that found every remaining document held by another runner
    processed_total: int
    failed_total: int

    @property
    def held_by_others(self) -> bool:
        """This batch claimed nothing, yet documents remain: another runner holds them all."""
        return self.idle_batches > 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class StageRequest:
    batch_size: int
    previous: Mapping[str, Any]


def parse_request(event: Mapping[str, Any], *, default_batch_size: int = 10) -> StageRequest:
    """``{"batch_size": 10, "previous": {...}}``; a bad value is a clear ``ValueError``."""
    if not isinstance(event, Mapping):
        raise ValueError(f"expected a JSON object as the stage input, got {type(event).__name__}")
    batch_size = event.get("batch_size", default_batch_size)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= MAX_BATCH_SIZE:
        raise ValueError(f"batch_size must be an integer from 1 to {MAX_BATCH_SIZE}, got {batch_size!r}")
    previous = event.get("previous") or {}
    if not isinstance(previous, Mapping):
        raise ValueError(f"previous must be an object, got {type(previous).__name__}")
    return StageRequest(batch_size=batch_size, previous=previous)


def advance(previous: Mapping[str, Any], result: StageResult) -> StageProgress:
    """The progress after one more batch: the iteration counted, the totals carried along.

    A batch that claimed nothing while documents remain is idle (the claim skipped them all:
    locked by another runner); ``idle_batches`` counts such batches in a row, 0 after any claim.
    """
    idle = result.processed + result.failed == 0 and result.remaining > 0
    return StageProgress(
        iteration=int(previous.get("iteration", 0)) + 1,
        processed=result.processed,
        failed=result.failed,
        remaining=result.remaining,
        idle_batches=int(previous.get("idle_batches", 0)) + 1 if idle else 0,
        processed_total=int(previous.get("processed_total", 0)) + result.processed,
        failed_total=int(previous.get("failed_total", 0)) + result.failed,
    )
