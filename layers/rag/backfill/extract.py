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

from dataclasses import replace
from datetime import date
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from rag.backfill import repository
from rag.backfill.documents import ClaimedDocument
from rag.backfill.errors import LLMOutputError
from rag.backfill.models import KnowledgeItem, StoredSegment
from rag.backfill.owners import People
from rag.backfill.rules import extract_by_rules
from rag.backfill.runner import ModelStage
from rag.backfill.sections import stated_items
from rag.backfill.text import clip
from rag.backfill.units import Unit, segment_units
from rag.knowledge import EXTRACTED

if TYPE_CHECKING:
    import psycopg

    from rag.config import Settings
    from rag.store.backfill_queue import StageName


class ExtractStage(ModelStage):
    name: StageName = "extract"

    def process(self, conn: psycopg.Connection, document: ClaimedDocument) -> None:
        items: list[KnowledgeItem] = []
        # Owners in one form per person: this meeting's speakers first, then the names its project knows.
        people = People.of((turn.speaker for turn in document.turns), known=repository.project_people(conn, document))
        for segment in repository.load_segments(conn, document):
            # Lines under "## Decisions", "Action items:" ... are items as listed; the extractors read the rest.
            stated = stated_items(document, segment)
            items.extend(stated.items)
            units = stated.outside(segment_units(document, segment))
            if not units:
                continue
            if self.settings.llm_provider == "openai":
                items.extend(extract_with_llm(document, segment, units, self.settings))
            else:
                items.extend(extract_by_rules(units, segment.id, document.meeting_date, people))
        items = [owned(item, people) for item in items]
        vectors = self.embedder.embed([item.description for item in items]) if items else []
        repository.replace_items(conn, document, items, vectors, self.model_id)


def owned(item: KnowledgeItem, people: People) -> KnowledgeItem:
    """A task with its assignee in the canonical form (whichever extractor named it); other items as they are."""
    if item.kind != "task" or not item.fields.get("assignee"):
        return item
    return replace(item, fields={**item.fields, "assignee": people.canonical(item.fields["assignee"])})


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
    status: Literal["proposed", "agreed", "revisited"] | None


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
    status: Literal["open", "done", "blocked"] | None


class ProposedKnowledge(BaseModel):
    decisions: list[ProposedDecision]
    risks: list[ProposedRisk]
    opportunities: list[ProposedOpportunity]
    tasks: list[ProposedTask]


EXTRACT_SYSTEM_PROMPT = (
    "You extract structured knowledge from one topic segment of a meeting transcript or document. The user gives "
    "numbered lines '[n] ...'. Return only what is stated: decisions taken, risks raised, opportunities named and "
    "tasks someone committed to or was asked to do. Each item points at the numbers of the lines it comes from and "
    "quotes their words as evidence. Use null for anything not stated. Resolve relative due dates against the "
    "meeting date when one is given."
)
# Each extracted kind and the field of ProposedKnowledge that lists it (its table's name).
PROPOSED_KINDS = tuple((kind.name, kind.table) for kind in EXTRACTED)


def extract_with_llm(
    document: ClaimedDocument, segment: StoredSegment, units: list[Unit], settings: Settings
) -> list[KnowledgeItem]:
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
        user=f"{meeting}Segment: {segment.title}\n\n" + numbered_units([lines[n] for n in sorted(lines)], first_number),
        response_model=ProposedKnowledge,
    )
    items = []
    for kind, attribute in PROPOSED_KINDS:
        for proposed in getattr(answer, attribute):
            if not (min(lines) <= proposed.first <= proposed.last <= max(lines)):
                raise LLMOutputError(
                    f"{kind} '{clip(proposed.description, 80)}' points at lines {proposed.first}-{proposed.last}, "
                    f"outside the segment's {min(lines)}-{max(lines)}"
                )
            covered = [
                unit for number, unit in enumerate(units) if proposed.first <= (unit.turn if by_turn else number) <= proposed.last
            ]
            if not covered:
                raise LLMOutputError(f"{kind} '{clip(proposed.description, 80)}' points at empty lines")
            fields = proposed.model_dump(exclude={"first", "last", "evidence", "description"})
            if kind == "task":
                fields["due_date"] = _iso_date(fields.get("due_date"))
            items.append(
                KnowledgeItem(
                    kind=kind,
                    description=clip(proposed.description, 500),
                    evidence=clip(proposed.evidence, 2000),
                    start_char=covered[0].start_char,
                    end_char=covered[-1].end_char,
                    method="llm",
                    segment_id=segment.id,
                    start_turn=covered[0].turn,
                    end_turn=covered[-1].turn,
                    speakers=tuple(dict.fromkeys(u.speaker for u in covered if u.speaker)),
                    fields=fields,
                )
            )
    return items


def _iso_date(value: str | None) -> date | None:
    try:
        return date.fromisoformat(value) if value else None
    except ValueError:
        return None
