"""What a stage Lambda receives from and returns to the state machine's loop.

The loop counts its iterations through the handler: it passes the previous result in
(``previous``) and gets ``iteration + 1`` and running totals back, so the definition
needs only plain Choice rules (no intrinsic arithmetic).
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
    processed_total: int
    failed_total: int

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
    """The progress after one more batch: the iteration counted, the totals carried along."""
    return StageProgress(
        iteration=int(previous.get("iteration", 0)) + 1,
        processed=result.processed,
        failed=result.failed,
        remaining=result.remaining,
        processed_total=int(previous.get("processed_total", 0)) + result.processed,
        failed_total=int(previous.get("failed_total", 0)) + result.failed,
    )
