"""What ``rag.timeline`` reasons over: when things were said, the items and change statements of a project's
meetings, and the effective state it works out for them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Any


@dataclass(frozen=True, order=True)
class Moment:
    """When something was said: the meeting's day, the document's upload, the position in it."""

    day: date
    uploaded: float  # the document's creation time (epoch seconds): meetings of one day in upload order
    document_id: str
    position: int  # start_char

    def same_meeting(self, other: Moment) -> bool:
        return self.document_id == other.document_id


@dataclass(frozen=True)
class TimedItem:
    kind: str  # decision | risk | task
    id: int
    at: Moment
    words: frozenset[str]
    description: str
    stated: dict[str, Any] = field(default_factory=dict)  # the extractor's values: status, assignee, due_date, supersedes
    end: int = 0  # end_char: with ``at.position``, the characters the item was taken from
    listed: bool = False  # taken from a notes section of its kind ("## Decisions"): the meeting's record of it
    context_words: frozenset[str] = frozenset()  # a transcript's task or decision: what was said just before it
    values: frozenset[str] = frozenset()  # a decision's days, months and amounts ("23", "decemb"; "16th" is "16")
    context_values: frozenset[str] = frozenset()  # those said just before it ("April is not happening"), no years
    choices: frozenset[str] = frozenset()  # a decision's proper names ("We switch to Pedalink": "pedalink")
    by_model: bool = False  # taken by a chat model, which states what the meeting settled, not each step to it

    def spans(self, moment: Moment) -> bool:
        return self.at.same_meeting(moment) and self.at.position <= moment.position < max(self.end, self.at.position + 1)


@dataclass(frozen=True)
class TimedChange:
    id: int
    at: Moment
    change: str  # done | cancelled | reassigned | rescheduled | closed; relisted: a notes action item (rag.timeline)
    words: frozenset[str]
    context_words: frozenset[str] = frozenset()
    speakers: tuple[str, ...] = ()
    new_value: str | None = None
    proposed_target: str | None = None
    named: frozenset[str] = frozenset()  # the people it names ("Gareth sent the draft conditions"): their name stems
    promised: bool = False  # a new date promised ("I'll have it by the 25th"), not a move said in so many words


@dataclass
class TaskState:
    status: str
    assignee: str | None
    due_date: date | None


@dataclass
class Timeline:
    """The effective state of every item, and what each change statement changed."""

    superseded_by: dict[int, int | None] = field(default_factory=dict)  # decision id -> the decision replacing it
    risk_status: dict[int, str] = field(default_factory=dict)
    tasks: dict[int, TaskState] = field(default_factory=dict)
    change_targets: dict[int, tuple[str, int] | None] = field(default_factory=dict)
