"""What the stages produce: topic segments and knowledge items, with their source positions."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any, Literal

from rag.knowledge import EXTRACTED

if TYPE_CHECKING:
    ItemKind = str  # the registry's names are known at run time only
else:
    ItemKind = Literal[tuple(kind.name for kind in EXTRACTED)]

# Each extracted kind's table and its own columns (besides the shared ones of every knowledge table).
ITEM_TABLES: dict[str, tuple[str, tuple[str, ...]]] = {kind.name: (kind.table, kind.fields) for kind in EXTRACTED}


@dataclass(frozen=True)
class Segment:
    """A topic segment; ``body[start_char:end_char]`` is its text, turns inclusive."""

    index: int
    title: str
    summary: str
    start_char: int
    end_char: int
    method: str  # llm | texttiling | headings
    start_turn: int | None = None
    end_turn: int | None = None
    speakers: tuple[str, ...] = ()
    heading_path: tuple[str, ...] = ()

    @property
    def embedding_text(self) -> str:
        """What the embed stage embeds for a segment (the original design's topic text)."""
        return f"Topic: {self.title}\n{self.summary}"


@dataclass(frozen=True)
class StoredSegment:
    """A segment row as the extract stage reads it."""

    id: int
    index: int
    title: str
    start_char: int
    end_char: int
    start_turn: int | None
    end_turn: int | None


@dataclass(frozen=True)
class KnowledgeItem:
    kind: ItemKind
    description: str
    evidence: str
    start_char: int
    end_char: int
    method: str  # llm | rules | sections
    segment_id: int | None = None
    start_turn: int | None = None
    end_turn: int | None = None
    speakers: tuple[str, ...] = ()
    fields: dict[str, Any] = field(default_factory=dict)  # the kind's own columns (ITEM_TABLES)
    context: str | None = None  # a transcript's task or decision: what was said just before it ("I'll take it")

    @property
    def due_date(self) -> date | None:
        value = self.fields.get("due_date")
        return value if isinstance(value, date) else None


@dataclass(frozen=True)
class KnowledgeChange:
    """A statement that changes an earlier item: a task done, cancelled, handed over or moved; a risk closed.

    Which item it changes is decided across the project's meetings (``rag.store.timeline.relink``).
    """

    change: str  # done | cancelled | reassigned | rescheduled | closed
    evidence: str
    start_char: int
    end_char: int
    method: str  # rules | llm
    segment_id: int | None = None
    start_turn: int | None = None
    end_turn: int | None = None
    speakers: tuple[str, ...] = ()
    context: str | None = None  # what was said just before (the question a "done" answers)
    new_value: str | None = None  # reassigned: the new owner; rescheduled: the new due date (ISO)
    proposed_target: str | None = None  # llm: the description of the earlier item it names
    promised: bool = False  # rescheduled by a new promise ("I'll have it by the 25th"), not a stated move
