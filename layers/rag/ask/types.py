"""What ``rag.ask.answer.ask`` takes and gives: a question with its scope and history, and a cited answer.

The API maps its request and response models to and from these at its edge (``rag.api.ask_routes``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from rag.ask.citations import Passage


@dataclass(frozen=True)
class ChatTurn:
    """One earlier message of the conversation."""

    role: Literal["user", "assistant"]
    content: str


@dataclass(frozen=True)
class Question:
    """A question, validated by its caller, with the projects it may look in (empty: all of the tenant's)."""

    text: str
    project_ids: tuple[str, ...] = ()
    history: tuple[ChatTurn, ...] = ()
    max_tool_calls: int = 4


@dataclass(frozen=True)
class Cited:
    """A passage the answer cites as ``[n]``."""

    n: int
    passage: Passage

    def record(self) -> dict[str, Any]:
        """The citation as the API returns it and the ask log keeps it."""
        p = self.passage
        return {
            "n": self.n, "id": p.citation_id(), "type": p.type, "document_id": p.document_id,
            "source": {"uri": p.source_uri, "title": p.title}, "start_turn": p.start_turn, "end_turn": p.end_turn,
            "start_char": p.start_char, "end_char": p.end_char, "speakers": list(p.speakers),
            "meeting_date": p.meeting_date,
        }  # fmt: skip


@dataclass(frozen=True)
class ToolCall:
    """A tool the model called, what with, and how many results it got (or why it failed)."""

    name: str
    arguments: dict[str, Any]
    result_count: int
    error: str | None = None


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class Answer:
    """A cited answer: ``[n]`` in ``text`` are exactly ``citations``; ``degraded`` says why a model did not answer."""

    text: str
    mode: Literal["llm", "extractive"]
    citations: tuple[Cited, ...]
    tool_calls: tuple[ToolCall, ...]
    usage: Usage = field(default_factory=Usage)
    took_ms: float = 0.0
    degraded: str | None = None
