"""Items that meeting notes state by their structure: the lines under a ``Decisions``, ``Risks`` or ``Action items`` label.

A note-taker who writes ``## Decisions`` and a list under it has already classified each
line; reading those lines sentence by sentence (``rag.backfill.rules``) would only lose
items and invent others. So, in documents (never transcripts):

- An item section starts at a label whose title names a kind: a Markdown heading
  (``## Action items``), a bold line (``**Decisions:**``) or a line that is only the
  label and a colon (``Risks:``). Titles are matched after dropping numbering, emoji,
  case, a parenthetical and qualifiers ("Key decisions", "Decisions made", "Risks and
  issues", "Next steps", "AIs", "Follow-ups", "To do"). A title made of two kinds
  ("Decisions and actions") is mixed: a line with a checkbox, an owner or a due date is a
  task, any other line the other kind. "Open questions", "Parking lot", "Notes" and
  every other title are not item sections. A label with text on its line ("Decision: we
  ship on May 19") is one item of that kind.
- The section runs to the next heading or label line. Each top-level list item (``-``,
  ``*``, ``+``, ``1.``, checkboxes) is one item, its wrapped lines and sub-items part of
  it; each row of a table whose header names the columns (task, owner, due, status, ...)
  is one item. A section without list items or table rows has one item per paragraph.
  "None", "N/A" and lead-ins ending in a colon are not items; paragraphs next to a list
  are left to the rules.
- Tasks: the owner as written ("Dana: ...", "Dana Kim - ...", "Dana to ...", "@dana",
  "(owner: Dana)", "(Dana, due Friday)", "Task — Dana — Friday", an owner column), the
  due date from ``rules.due_date`` (of the due column when there is one), status done for
  ``[x]``, a "done" marker or status column, blocked when it says so, else open.
  Decisions are "agreed", with an owner only when one is labelled; risks and
  opportunities get the rules' category and type.

Every item keeps the character range of its lines; the extract stage runs the rules
only over the sentences outside those ranges, so no line becomes two items. Where sections
and their blocks are is rag.backfill.notes_layout's; what a block says is read here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date
from typing import Any

from rag.backfill import cues, rules
from rag.backfill.documents import ClaimedDocument
from rag.backfill.models import ItemKind, KnowledgeItem, StoredSegment
from rag.backfill.notes_layout import (
    CHECKBOX,
    LIST_ITEM,
    NAME,
    NOTHING,
    Block,
    ItemSection,
    blocks,
    item_sections,
    lines_of,
    not_an_owner,
    plain,
)
from rag.backfill.text import clip
from rag.backfill.units import Unit

HANDLE = r"@(?P<handle>[\w.-]+)"
OWNER_FIRST = (
    re.compile(rf"^{HANDLE}[:,]?\s+(?=\S)"),
    re.compile(rf"^(?P<name>{NAME})\s*:\s+(?=\S)"),
    re.compile(rf"^(?P<name>{NAME})\s+(?:—|–|-)\s+(?=[a-z])"),  # "Dana — send ..."; "Fix BOM — Dana" is below
    re.compile(rf"^(?P<name>{NAME})\s+(?:to|will|is\s+to|is\s+going\s+to|should|needs?\s+to|owns|takes)\s+(?=\w)"),
)
OWNER_LABELLED = re.compile(rf"\b(?i:owner|owners|assignee|assigned\s+to|responsible|who)\s*[:=]\s*(?:{HANDLE}|(?P<name>{NAME}))")
OWNER_PARENTHESIS = re.compile(rf"\(\s*(?:{HANDLE}|(?P<name>{NAME}))\s*(?:[,;/]\s*[^)]*)?\)\s*\.?\s*$")
OWNER_ANYWHERE = re.compile(rf"(?<![\w@]){HANDLE}")
SEPARATED = re.compile(r"\s+[—–|]\s+|\s+-\s+")
# A marker says a task is done or blocked ("(done)", "— DONE", "status: blocked", a status cell); "make sure it is
# delivered" or "unblock the build" does not.
MARKED = r"(?:\(\s*{0}\b[^)]*\)|^\s*{0}\b|\b{0}\s*[.!\]]*\s*$|\bstatus\s*[:=]\s*{0}\b)"
DONE = re.compile(MARKED.format(r"(?:done|completed?|finished|closed)") + "|✅|✔", re.I)
BLOCKED = re.compile(MARKED.format("blocked") + r"|\bblocked\s+(?:on|by)\b", re.I)
LIKELIHOOD = re.compile(
    r"\b(?:likelihood|probability)\s*[:=]?\s*(?P<level>low|medium|high)\b|\((?P<alone>low|medium|high)\)", re.I
)
MITIGATION_LABEL = re.compile(r"\b(?:mitigation|mitigated\s+by|plan)\s*[:—–-]\s*(?P<how>.+)$", re.I)
# "The connector risk is closed" under Risks reports on an earlier risk: not a new one.
RISK_CLOSED = re.compile(
    r"\b(?:is|are|was|were|has\s+been|have\s+been)\s+(?:now\s+)?(?:closed|resolved|retired|gone)\b"
    r"|\bno\s+longer\s+(?:a\s+|an\s+)?(?:risk|issue|concern|blocker|blocking)\b",
    re.I,
)
DUE_LABEL = re.compile(r"\b(?:due|deadline|by)\b\s*:?\s*(?P<when>[^,;()]+)", re.I)


def _owner_name(match: re.Match[str]) -> str | None:
    name = match["handle"] if match.groupdict().get("handle") else match.groupdict().get("name")
    return None if not name or not_an_owner(name) else name


def task_owner(text: str) -> str | None:
    """Who a task line says owns it, as written ("Dana Kim", "dana" for "@dana"); None when it names nobody."""
    for pattern in OWNER_FIRST:
        if (match := pattern.search(text)) and (owner := _owner_name(match)):
            return owner
    for pattern in (OWNER_LABELLED, OWNER_PARENTHESIS):
        if (match := pattern.search(text)) and (owner := _owner_name(match)):
            return owner
    parts = SEPARATED.split(text)
    for part in parts[1:]:  # "Send the BOM — Dana — March 16"
        if re.fullmatch(rf"@?{NAME}", part.strip().rstrip(".")) and not not_an_owner(part.strip().lstrip("@")):
            return part.strip().lstrip("@").rstrip(".")
    if match := OWNER_ANYWHERE.search(text):
        return match["handle"]
    return None


def _labelled_owner(text: str) -> str | None:
    match = OWNER_LABELLED.search(text)
    return _owner_name(match) if match else None


def _status(text: str, checkbox: str | None) -> str:
    if checkbox is not None and checkbox.strip():
        return "done"
    if BLOCKED.search(text):
        return "blocked"
    return "done" if checkbox is None and DONE.search(text) else "open"


def _due(text: str, meeting_date: date | None) -> date | None:
    labelled = DUE_LABEL.search(text)
    return (rules.due_date(labelled["when"], meeting_date) if labelled else None) or rules.due_date(text, meeting_date)


@dataclass(frozen=True)
class Reading:
    """What one block says, before it becomes an item of a kind."""

    description: str  # the item's first line, markup off
    whole: str  # every line of the block, markup off
    checkbox: str | None  # the checkbox's mark, None without one
    cells: dict[str, str]


def read(block: Block) -> Reading | None:
    texts = []
    checkbox: str | None = None
    for number, line in enumerate(block.lines):
        text = line.text.strip()
        if match := LIST_ITEM.match(line.text):
            text = match["text"]
        if number == 0 and (box := CHECKBOX.match(text)):
            checkbox = box["mark"] if box["mark"] is not None else ("" if box["symbol"] == "☐" else "x")
            text = text[box.end() :]
        texts.append(plain(text))
    if block.cells:
        head = plain(block.cells.get("text", ""))
        cells = {role: plain(value) for role, value in block.cells.items()}
    else:
        head_lines = [texts[0]]
        for line, text in zip(block.lines[1:], texts[1:]):  # wrapped lines, not sub-items
            if LIST_ITEM.match(line.text):
                break
            head_lines.append(text)
        head, cells = " ".join(head_lines), {}
    whole = " ".join(t for t in texts if t)
    if not head or NOTHING.match(head) or (head.endswith(":") and len(block.lines) == 1):
        return None
    return Reading(head, whole, checkbox, cells)


def _has_task_marks(reading: Reading, meeting_date: date | None) -> bool:
    return (
        reading.checkbox is not None
        or bool(reading.cells.get("owner") or reading.cells.get("due"))
        or task_owner(reading.description) is not None
        or _due(reading.description, meeting_date) is not None
    )


def item_fields(kind: ItemKind, reading: Reading, meeting_date: date | None) -> dict[str, Any]:
    text, cells = reading.description, reading.cells
    if kind == "task":
        due_text = cells.get("due")
        status_text = cells.get("status")
        return {
            "assignee": cells.get("owner") or task_owner(text),
            "due_date": rules.due_date(due_text, meeting_date) if due_text else _due(text, meeting_date),
            "status": _status(status_text if status_text is not None else text, reading.checkbox),
        }
    if kind == "decision":
        why = cues.RATIONALE.search(reading.whole)
        return {
            "status": "agreed",
            "owner": cells.get("owner") or _labelled_owner(reading.whole),
            "rationale": cells.get("rationale") or (why["why"].rstrip(".") if why else None),
        }
    if kind == "risk":
        likelihood = LIKELIHOOD.search(reading.whole)
        level = (cells.get("likelihood") or (likelihood["level"] or likelihood["alone"] if likelihood else "") or "").lower()
        mitigation = MITIGATION_LABEL.search(reading.whole)
        return {
            "category": rules.keyword_class(reading.whole, cues.RISK_CATEGORIES, "general"),
            "likelihood": level if level in ("low", "medium", "high") else None,
            "impact": cells.get("impact") or None,
            "mitigation": cells.get("mitigation") or (clip(mitigation["how"], 500) if mitigation else None),
        }
    return {  # opportunity
        "type": rules.keyword_class(reading.whole, cues.OPPORTUNITY_TYPES, "general"),
        "owner": cells.get("owner") or _labelled_owner(reading.whole),
    }


def section_items(
    body: str, sections: Sequence[ItemSection], segment_id: int | None, meeting_date: date | None
) -> tuple[list[KnowledgeItem], list[tuple[int, int]]]:
    """The items ``sections`` list, in order, and the ranges of their lines (labels included)."""
    items = []
    covered = []
    for section in sections:
        label_line = next(lines_of(body, section.start, section.end))
        covered.append((label_line.start, label_line.end))
        for block in blocks(body, section):
            covered.append((block.start, block.end))
            reading = read(block)
            if reading is None:
                continue
            kind = section.kinds[0]
            if len(section.kinds) > 1:  # "Decisions and actions": tasks by their marks
                others = [k for k in section.kinds if k != "task"]
                marked = "task" in section.kinds and _has_task_marks(reading, meeting_date)
                kind = "task" if marked or not others else others[0]
            if kind == "risk" and RISK_CLOSED.search(reading.whole):
                covered.pop()  # left to what reads sentences for changes to earlier items
                continue
            fields = item_fields(kind, reading, meeting_date)
            if kind == "task" and fields["assignee"] is None:
                fields["assignee"] = section.owner
            first = block.lines[0].text
            items.append(
                KnowledgeItem(
                    kind=kind,
                    description=clip(reading.description, 500),
                    evidence=clip(body[block.start : block.end].strip(), 2000),
                    start_char=block.start + len(first) - len(first.lstrip()),
                    end_char=block.end,
                    method="sections",
                    segment_id=segment_id,
                    fields=fields,
                )
            )
    return items, covered


# --- the extract stage's view --------------------------------------------------------------


@dataclass(frozen=True)
class StatedItems:
    """A segment's items from its item sections, and the ranges they cover."""

    items: list[KnowledgeItem]
    covered: list[tuple[int, int]]

    def outside(self, units: Sequence[Unit]) -> list[Unit]:
        """The units that overlap no item section: what the sentence extractors still read."""
        return [u for u in units if not any(start < u.end_char and u.start_char < end for start, end in self.covered)]


def stated_items(document: ClaimedDocument, segment: StoredSegment) -> StatedItems:
    """The items of the segment's item sections (none for transcripts: their structure is turns)."""
    if document.turns:
        return StatedItems([], [])
    inside = [s for s in item_sections(document.body) if segment.start_char <= s.start < segment.end_char]
    clipped = [replace(s, end=min(s.end, segment.end_char)) for s in inside]
    return StatedItems(*section_items(document.body, clipped, segment.id, document.meeting_date))
