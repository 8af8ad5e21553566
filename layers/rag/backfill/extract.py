"""The extract stage (embedded -> extracted): decisions, risks, opportunities and tasks per segment.

With an LLM configured the model reads the segment's numbered turns (or sentences, for
documents) and answers with structured items that point back at them; offline the
rule-based extractor of ``rag.backfill.rules`` reads it sentence by sentence. Either
way every item gets its turn and character range, speakers, the words it came from
(evidence) and a vector of its description; the document's items are replaced as a whole.
What a document lists under a ``Decisions``, ``Risks`` or ``Action items`` label is taken
as listed (``rag.backfill.sections``, method "sections"); the extractors read the rest.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date
from itertools import islice, takewhile
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from rag.backfill import repository
from rag.backfill.changes import detect_changes
from rag.backfill.documents import ClaimedDocument
from rag.backfill.earlier_items import earlier_items_prompt, link_listed, listed_items_prompt, named_earlier
from rag.backfill.errors import LLMOutputError
from rag.backfill.models import KnowledgeChange, KnowledgeItem, StoredSegment
from rag.backfill.rules import extract_by_rules
from rag.backfill.runner import ModelStage
from rag.backfill.sections import stated_items
from rag.backfill.text import clip
from rag.backfill.units import Unit, segment_units
from rag.knowledge import EXTRACTED
from rag.people import People

if TYPE_CHECKING:
    import psycopg

    from rag.config import Settings
    from rag.store.backfill_queue import StageName


# Before a transcript's task or decision: what "it" is in "I'll take it", what "we switch to Pedalink" replaces.
CONTEXT_CHARS = 200  # a task's: the request it answers
DECISION_CONTEXT_CHARS = 400  # a decision's: a change often names only the new choice, the old one said further back


class ExtractStage(ModelStage):
    name: StageName = "extract"

    def process(self, conn: psycopg.Connection, document: ClaimedDocument) -> None:
        from rag.store.timeline import lock_project, relink

        lock_project(conn, document.tenant_id, document.project_id)  # before its old items go (relink's docstring)
        items: list[KnowledgeItem] = []
        changes: list[KnowledgeChange] = []
        # Owners in one form per person: this meeting's speakers first, then the names its project knows.
        people = People.of((turn.speaker for turn in document.turns), known=repository.project_people(conn, document))
        with_llm = self.settings.llm.provider != "none"
        earlier = repository.earlier_open_items(conn, document) if with_llm else []
        # Lines under "## Decisions", "Action items:" ... are items as listed; the extractors read the rest.
        segments = [(segment, stated_items(document, segment)) for segment in repository.load_segments(conn, document)]
        listed = [item for _, stated in segments for item in stated.items]
        for segment, stated in segments:
            items.extend(stated.items)
            every_unit = segment_units(document, segment)
            units = stated.outside(every_unit)
            unread = every_unit  # what no model reads: change statements are found in it offline
            if with_llm and units:
                found = extract_with_llm(document, segment, units, self.settings, earlier, listed)
                items.extend(found.items)
                changes.extend(found.changes)
                read = set(units)
                unread = [unit for unit in every_unit if unit not in read]  # the listed sections' lines
            elif units:
                items.extend(extract_by_rules(units, segment.id, document.meeting_date, people))
            changes.extend(detect_changes(unread, segment.id, document.meeting_date, people))
        if with_llm:  # what a listed decision replaces, as the model says (its own decisions already say it)
            items = link_listed(items, earlier, document.meeting_date, self.settings)
        # "I'd call the bricking risk closed" mentions a risk to close it, not to raise one; "Mark sent the
        # quotes" under Action items reports a task done, it is no new task.
        reports = {"risk": [c for c in changes if c.change == "closed"],
                   "task": [c for c in changes if c.change in ("done", "cancelled")]}  # fmt: skip
        items = [in_context(owned(item, people), document) for item in items if not _at_any(item, reports.get(item.kind, []))]
        vectors = self.embedder.embed([item.description for item in items]) if items else []
        repository.replace_items(conn, document, items, vectors, self.model_id)
        repository.replace_changes(conn, document, changes)
        # What this meeting decides, closes or hands over changes earlier items; its own items may be
        # changed by meetings already extracted (meetings are not always backfilled in date order).
        relink(conn, document.tenant_id, document.project_id)


def _at_any(item: KnowledgeItem, changes: Sequence[KnowledgeChange]) -> bool:
    """Whether a change statement is where the item starts (a request followed by "Raj pushed it yesterday" in
    the same turn is still a request)."""
    return any(c.start_char <= item.start_char < c.end_char for c in changes)


def owned(item: KnowledgeItem, people: People) -> KnowledgeItem:
    """A task with its assignee in the canonical form (whichever extractor named it); other items as they are."""
    if item.kind != "task" or not item.fields.get("assignee"):
        return item
    return replace(item, fields={**item.fields, "assignee": people.canonical(item.fields["assignee"])})


def in_context(item: KnowledgeItem, document: ClaimedDocument) -> KnowledgeItem:
    """A transcript's task or decision with what was said just before it: the last ``CONTEXT_CHARS`` (a decision's:
    ``DECISION_CONTEXT_CHARS``) of the utterances up to it, without speakers' names and roles; other items as they
    are."""
    if item.kind not in ("task", "decision") or item.start_turn is None:
        return item
    # The turns are in order: find the first one reaching into the window instead of reading them all for every item.
    chars = DECISION_CONTEXT_CHARS if item.kind == "decision" else CONTEXT_CHARS
    first = bisect_right(document.turns, item.start_char - chars, key=lambda turn: turn.end_char)
    said = [
        document.body[turn.text_start : min(turn.end_char, item.start_char)]
        for turn in takewhile(lambda turn: turn.text_start < item.start_char, islice(document.turns, first, None))
    ]
    before = " ".join(" ".join(said).split())[-chars:]
    return replace(item, context=before or None)


# --- LLM --------------------------------------------------------------------------------


class Located(BaseModel):
    first: int = Field(description="number of the first turn/sentence the item comes from")
    last: int = Field(description="number of the last turn/sentence (inclusive)")
    evidence: str = Field(description="the exact words the item is based on, quoted from those lines")
    description: str = Field(description="the item in one self-contained sentence")


class ProposedDecision(Located):
    rationale: str | None
    owner: str | None
    impact: str | None
    supersedes: str | None = Field(description="the label (E1, E2, ...) of the earlier decision this one replaces, or null")


class ProposedRisk(Located):
    category: str | None
    likelihood: Literal["low", "medium", "high"] | None
    impact: str | None
    mitigation: str | None


class ProposedOpportunity(Located):
    type: str | None
    owner: str | None
    next_step: str | None


class ProposedTask(Located):
    assignee: str | None
    due_date: str | None = Field(description="ISO date YYYY-MM-DD when a deadline is stated, else null")
    status: Literal["open", "done", "blocked", "cancelled"] | None


class ProposedChange(BaseModel):
    first: int = Field(description="number of the first line that states the change")
    last: int = Field(description="number of the last line (inclusive)")
    evidence: str = Field(description="the exact words that state the change, quoted from those lines")
    item: str = Field(description="the label (E1, E2, ...) of the earlier task or risk it changes")
    change: Literal["done", "cancelled", "reassigned", "rescheduled", "closed"]
    new_owner: str | None = Field(description="reassigned: who owns the task now, else null")
    new_due_date: str | None = Field(
        description="rescheduled, or reassigned with a new date: the new ISO date YYYY-MM-DD, else null"
    )


class ProposedKnowledge(BaseModel):
    decisions: list[ProposedDecision]
    risks: list[ProposedRisk]
    opportunities: list[ProposedOpportunity]
    tasks: list[ProposedTask]
    changes: list[ProposedChange] = Field(
        description="earlier items (E1, E2, ...) these lines report done, cancelled, handed over, rescheduled or (risks) closed"
    )


EXTRACT_SYSTEM_PROMPT = (
    "You extract structured knowledge from one topic segment of a meeting transcript or document. The user gives "
    "numbered lines '[n] ...'. Return only what is stated: decisions taken, risks raised, opportunities named and "
    "tasks someone committed to or was asked to do. Each item points at the numbers of the lines it comes from and "
    "quotes their words as evidence. Use null for anything not stated. Resolve relative due dates against the "
    "meeting date when one is given. The user may also list earlier items of the project, labelled E1, E2, ...: "
    "when a decision here replaces an earlier decision, give its label in 'supersedes'; when these lines report an "
    "earlier task done, cancelled, handed over to someone or moved to a new date, or an earlier risk closed, add "
    "a change naming its label. Items the user says the document already lists are recorded: do not extract them again."
)
# Each extracted kind and the field of ProposedKnowledge that lists it (its table's name).
PROPOSED_KINDS = tuple((kind.name, kind.table) for kind in EXTRACTED)
# The fields of a Proposed* model that name earlier items (links, not columns of the kind's table).
LINK_FIELDS = ("supersedes",)


@dataclass(frozen=True)
class Extracted:
    items: list[KnowledgeItem]
    changes: list[KnowledgeChange]


def extract_with_llm(
    document: ClaimedDocument,
    segment: StoredSegment,
    units: list[Unit],
    settings: Settings,
    earlier: Sequence[repository.EarlierItem] = (),
    listed: Sequence[KnowledgeItem] = (),
) -> Extracted:
    from rag.llm import numbered_units, structured_completion

    # Transcripts are numbered by turn (the model sees whole turns), documents by sentence.
    by_turn = bool(document.turns) and segment.start_turn is not None and segment.end_turn is not None
    if by_turn and segment.start_turn is not None and segment.end_turn is not None:
        lines = {t.index: f"{t.speaker}: {t.text}" for t in document.turns[segment.start_turn : segment.end_turn + 1]}
    else:
        lines = dict(enumerate(u.text for u in units))
    first_number = min(lines)
    meeting = f"Meeting date: {document.meeting_date.isoformat()}\n" if document.meeting_date else ""
    answer = structured_completion(
        settings,
        system=EXTRACT_SYSTEM_PROMPT,
        user=earlier_items_prompt(earlier)
        + listed_items_prompt(listed)
        + f"{meeting}Segment: {segment.title}\n\n"
        + numbered_units([lines[n] for n in sorted(lines)], first_number),
        response_model=ProposedKnowledge,
    )

    def covered_by(name: str, first: int, last: int) -> list[Unit]:
        if not (min(lines) <= first <= last <= max(lines)):
            raise LLMOutputError(f"{name} points at lines {first}-{last}, outside the segment's {min(lines)}-{max(lines)}")
        covered = [unit for number, unit in enumerate(units) if first <= _line_number(unit, number, by_turn) <= last]
        if not covered:
            raise LLMOutputError(f"{name} points at empty lines")
        return covered

    items = []
    for kind, attribute in PROPOSED_KINDS:
        for proposed in getattr(answer, attribute):
            covered = covered_by(f"{kind} '{clip(proposed.description, 80)}'", proposed.first, proposed.last)
            fields = proposed.model_dump(exclude={"first", "last", "evidence", "description", *LINK_FIELDS})
            if kind == "task":
                fields["due_date"] = _iso_date(fields.get("due_date"))
            if kind == "decision" and any(item.kind == "decision" for item in earlier):  # else it was asked nothing
                fields["supersedes"] = named_earlier(proposed.supersedes, earlier, "decision")
            items.append(
                KnowledgeItem(
                    kind=kind,
                    description=clip(proposed.description, 500),
                    evidence=clip(proposed.evidence, 2000),
                    method="llm",
                    segment_id=segment.id,
                    fields=fields,
                    **_place(covered),
                )
            )
    changes = []
    for proposed_change in answer.changes:
        wanted = "risk" if proposed_change.change == "closed" else "task"
        target = named_earlier(proposed_change.item, earlier, wanted)
        if target is None:
            continue  # names no earlier item of the kind it changes: nothing to link
        covered = covered_by(f"change of {proposed_change.item}", proposed_change.first, proposed_change.last)
        changes += [
            KnowledgeChange(
                change=change,
                evidence=clip(proposed_change.evidence, 2000),
                method="llm",
                segment_id=segment.id,
                new_value=new_value,
                proposed_target=target,
                **_place(covered),
            )
            for change, new_value in _stated_changes(proposed_change)
        ]
    return Extracted(items, changes)


def _stated_changes(proposed: ProposedChange) -> list[tuple[str, str | None]]:
    """The changes (and their new values) one proposed change states: a handover that also gives a new date ("Derek,
    would you take it on, by the 8th?") hands the task over and moves it."""
    new_due = _iso_date(proposed.new_due_date)
    if proposed.change == "rescheduled":
        return [("rescheduled", new_due.isoformat() if new_due else None)]
    if proposed.change != "reassigned":
        return [(proposed.change, None)]
    return [("reassigned", proposed.new_owner)] + ([("rescheduled", new_due.isoformat())] if new_due else [])


def _place(covered: Sequence[Unit]) -> dict[str, Any]:
    """Where the lines a model pointed at are: characters, turns and speakers."""
    return {
        "start_char": covered[0].start_char,
        "end_char": covered[-1].end_char,
        "start_turn": covered[0].turn,
        "end_turn": covered[-1].turn,
        "speakers": tuple(dict.fromkeys(u.speaker for u in covered if u.speaker)),
    }


def _line_number(unit: Unit, position: int, by_turn: bool) -> int:
    """The number the model saw for a unit's line: its turn's (transcripts) or its position (documents)."""
    return unit.turn if by_turn and unit.turn is not None else position


def _iso_date(value: str | None) -> date | None:
    try:
        return date.fromisoformat(value) if value else None
    except ValueError:
        return None
