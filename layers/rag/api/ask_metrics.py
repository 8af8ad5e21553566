"""The CloudWatch metrics of the answers given since the query function last reported them (``Ask*``).

The ask route records each answer as it is given; the handler takes them after the response, like the reranker's
fallbacks (``rag.search.rerank.take_fallbacks``), instead of parsing its own response body again.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rag.ask.types import Answer

_lock = threading.Lock()
_pending: list[tuple[str, str, float]] = []


def answer_metrics(reply: Answer) -> list[tuple[str, str, float]]:
    """CloudWatch metrics of one answer: (name, unit, value)."""
    metrics: list[tuple[str, str, float]] = [
        ("AskInputTokens", "Count", reply.usage.input_tokens),
        ("AskOutputTokens", "Count", reply.usage.output_tokens),
        ("AskToolCalls", "Count", len(reply.tool_calls)),
        ("AskCitations", "Count", len(reply.citations)),
        ("AskLatency", "Milliseconds", reply.took_ms),
    ]
    if reply.mode == "extractive":
        metrics.append(("AskExtractiveAnswers", "Count", 1))
    if reply.degraded:
        metrics.append(("AskDegradedAnswers", "Count", 1))
    return metrics


def record_answer(reply: Answer) -> None:
    """Keep one answer's metrics until the handler takes them."""
    with _lock:
        _pending.extend(answer_metrics(reply))


def take_answer_metrics() -> list[tuple[str, str, float]]:
    """The metrics recorded since the last call, oldest first."""
    with _lock:
        taken = list(_pending)
        _pending.clear()
    return taken
