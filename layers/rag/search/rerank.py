"""A second judge of the fused candidates: off by default, an LLM or a Bedrock rerank model when configured.

``RAG_RERANKER=llm`` hands the best ``rerank_candidates`` fused hits to the chat model
of ``RAG_LLM_MODEL`` (OpenAI-compatible, structured output), which grades each for how
well it answers the question (0-10). Hits are then ordered by grade, ties keeping their
fused order, and each hit's ``score`` becomes its grade / 10. A reranker that fails
(timeout, 429 after its retry, an answer that does not fit) leaves the fused order: a
search never fails because of it, and the failure is logged and counted (``take_fallbacks``,
the query function's ``RerankFallbacks`` metric).

``RAG_RERANKER=bedrock``: Bedrock's Rerank API scores the same candidates (``rag.search.bedrock_rerank``).

Cost and time, per search: one chat call over about ``rerank_candidates`` x 250 tokens
(30 candidates: about 8k input tokens).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from pydantic import BaseModel

if TYPE_CHECKING:
    from rag.config import Settings
    from rag.search.engine import Hit

logger = logging.getLogger(__name__)

MAX_GRADE = 10
PASSAGE_CHARS = 1500  # a 512-token chunk of English is about 2,000 characters; the grade needs the gist, not every word

SYSTEM = (
    "You grade search results for a question about meetings and documents. For every numbered passage, "
    f"give an integer relevance from 0 (unrelated) to {MAX_GRADE} (directly answers the question). "
    "Judge what the passage says, not how many words it shares with the question. Grade every passage once."
)


class Reranker(Protocol):
    max_grade: float  # the best grade it gives: a hit's score becomes its grade / max_grade

    def grades(self, query: str, passages: Sequence[str]) -> list[float]:
        """One grade per passage, higher is better (raises when it cannot grade)."""
        ...


class PassageGrade(BaseModel):
    passage: int
    relevance: int


class PassageGrades(BaseModel):
    grades: list[PassageGrade]


class LLMReranker:
    """Grades from a chat model with structured outputs (the backfill's LLM client)."""

    max_grade = float(MAX_GRADE)

    def __init__(self, settings: Settings):
        # Its own short timeout and one retry: a search waits for it.
        self.settings = settings.with_values(llm_timeout_seconds=settings.search.rerank_timeout_seconds, llm_max_retries=1)

    def grades(self, query: str, passages: Sequence[str]) -> list[float]:
        from rag.llm import numbered_units, structured_completion

        answer = structured_completion(
            self.settings,
            system=SYSTEM,
            user=f"Question: {query}\n\nPassages:\n{numbered_units(list(passages), max_chars=PASSAGE_CHARS)}",
            response_model=PassageGrades,
        )
        grades = [-1.0] * len(passages)  # a passage the model skipped goes after the graded ones
        for grade in answer.grades:
            if 0 <= grade.passage < len(passages):
                grades[grade.passage] = float(min(max(grade.relevance, 0), MAX_GRADE))
        return grades


class _FallbackCount:
    """Searches that kept the fused order because the reranker failed, since the last ``take``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0

    def add(self) -> None:
        with self._lock:
            self._count += 1

    def take(self) -> int:
        with self._lock:
            count, self._count = self._count, 0
            return count


_fallbacks = _FallbackCount()


def take_fallbacks() -> int:
    """Reranker failures since the last call (the query function reports them as ``RerankFallbacks``)."""
    return _fallbacks.take()


def get_reranker(settings: Settings) -> Reranker | None:
    if settings.search.reranker == "llm":
        return LLMReranker(settings)
    if settings.search.reranker == "bedrock":
        from rag.search.bedrock_rerank import BedrockReranker

        return BedrockReranker(settings)
    return None


def rerank(reranker: Reranker, query: str, ranked: list[tuple[str, Hit]], top_k: int) -> list[tuple[str, Hit]]:
    """``ranked`` reordered by the reranker's grades, at most ``top_k``; unchanged if it fails."""
    if len(ranked) < 2:
        return ranked[:top_k]
    try:
        grades = reranker.grades(query, [hit.content for _, hit in ranked])
    except Exception as exc:  # noqa: BLE001 - any failure of an optional stage leaves the fused order
        _fallbacks.add()
        logger.warning("%s failed, keeping the fused order: %r", type(reranker).__name__, exc)
        return ranked[:top_k]
    if len(grades) != len(ranked):
        _fallbacks.add()
        logger.warning("%s graded %d of %d hits, keeping the fused order", type(reranker).__name__, len(grades), len(ranked))
        return ranked[:top_k]
    order = sorted(range(len(ranked)), key=lambda i: -grades[i])  # stable: ties keep the fused order
    scale = reranker.max_grade
    return [(ranked[i][0], replace(ranked[i][1], score=min(max(grades[i], 0.0) / scale, 1.0))) for i in order[:top_k]]
