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
only over the sentences outside those ranges, so no line becomes two items.
"""

from __future__ import annotations

import calendar
import functools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any

from rag.backfill import cues, rules
from rag.backfill.documents import ClaimedDocument
from rag.backfill.models import ItemKind, KnowledgeItem, StoredSegment
from rag.backfill.text import clip
from rag.backfill.units import Unit

# --- which titles name which kind --------------------------------------------------------

TITLE_KINDS: dict[str, ItemKind] = {
    **dict.fromkeys(
        ("decision", "decisions", "decision log", "agreed", "agreement", "agreements", "resolution", "resolutions",
         "conclusion", "conclusions", "what we decided", "decided"), "decision"),
    **dict.fromkeys(
        ("risk", "risks", "issue", "issues", "concern", "concerns", "blocker", "blockers", "threat", "threats",
         "risk register"), "risk"),
    **dict.fromkeys(("opportunity", "opportunities"), "opportunity"),
    **dict.fromkeys(
        ("action item", "action items", "action", "actions", "ai", "ais", "action point", "action points", "next step",
         "next steps", "task", "tasks", "to do", "to dos", "todo", "todos", "follow up", "follow ups", "followups",
         "assignment", "assignments", "commitments", "who does what"), "task"),
}  # fmt: skip
# What a title may name next to a kind without changing it: "Risks & mitigations", "Actions / owners / due dates".
COMPANIONS = frozenset(("mitigation", "mitigations", "owner", "owners", "due date", "due dates", "deadlines", "status"))
LEADING_QUALIFIERS = re.compile(
    r"^(?:(?:key|main|major|final|new|open|outstanding|pending|current|top|agreed|our|the|today's|summary\s+of|list\s+of)\s+)+"
)
TRAILING_QUALIFIERS = re.compile(
    r"(?:\s+(?:made|taken|reached|agreed|raised|identified|so\s+far|this\s+week|today|log|register|list"
    r"|for\s+next\s+(?:week|meeting|time)|from\s+(?:this|the)\s+meeting|and\s+owners|with\s+owners))+$"
)
TITLE_PARTS = re.compile(r"\s*(?:,|&|\+|/|\band\b)\s*")


def title_kinds(title: str) -> tuple[ItemKind, ...]:
    """The kinds a section title names, ``()`` when it names none (or also names something else)."""
    words = title.lower().replace("’", "'").replace("-", " ").replace("_", " ")
    words = re.sub(r"\([^)]*\)", " ", words)
    words = re.sub(r"^\s*(?:\d+(?:\.\d+)*|[ivx]+|[a-z])[.)]\s+", "", words)  # "3. Decisions", "b) Risks"
    words = " ".join(re.sub(r"[^a-z'&/,+ ]", " ", words).split())
    kinds: list[ItemKind] = []
    for part in TITLE_PARTS.split(words):
        if not part or part in COMPANIONS:
            continue
        kind = TITLE_KINDS.get(part) or TITLE_KINDS.get(TRAILING_QUALIFIERS.sub("", LEADING_QUALIFIERS.sub("", part)))
        if kind is None:
            return ()
        if kind not in kinds:
            kinds.append(kind)
    return tuple(kinds)


# --- lines: labels, list items, table rows -----------------------------------------------

ATX_HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]+(?P<title>.*?))?[ \t#]*$")
BOLD_LABEL = re.compile(r"^\s*(?:\*\*|__)(?P<title>[^*_\n]{1,60}?)\s*:?\s*(?:\*\*|__)\s*:?\s*(?P<rest>.*)$")
PLAIN_LABEL = re.compile(r"^(?P<title>[A-Za-z][A-Za-z0-9 &/'’+,-]{0,50}?)\s*:\s*(?P<rest>.*)$")
FENCE = re.compile(r"^ {0,3}(?:`{3,}|~{3,})")
LIST_ITEM = re.compile(r"^(?P<indent>[ \t]*)(?:[-*+•▪◦]|\d{1,3}[.)]|[a-z][.)])[ \t]+(?P<text>\S.*)$")
CHECKBOX = re.compile(r"^\[(?P<mark>[ xX✓✔])\]\s*|^(?P<symbol>[☐☑✅✔])\s*")
TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")
WHEN = r"(?:\s+(?:this\s+(?:week|time)|today|for\s+now|so\s+far|yet))?"
NOTHING = re.compile(  # "None this week.", "N/A", "No new risks."
    rf"^(?:(?:none|nothing(?:\s+new)?){WHEN}|n/?a|tbd|[-=]+"
    rf"|no\s+(?:new\s+|open\s+|further\s+)?(?:decisions?|risks?|issues?|actions?|action\s+items?|tasks?|opportunities"
    rf"|blockers|concerns|updates?){WHEN})\W*$",
    re.I,
)
LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
EMPHASIS = re.compile(r"\*\*|__|~~|`|(?<!\w)[*_](?=\S)|(?<=\S)[*_](?!\w)")


@dataclass(frozen=True)
class Line:
    start: int  # offsets into the document body
    end: int
    text: str


@dataclass
class Block:
    """One item's lines: a list item with its continuation and sub-items, a table row or a paragraph."""

    lines: list[Line]
    cells: dict[str, str] = field(default_factory=dict)  # a table row's cells by column role

    @property
    def start(self) -> int:
        return self.lines[0].start

    @property
    def end(self) -> int:
        return self.lines[-1].end


LABEL_LEVEL = 7  # a bold or plain label sits below every heading level


@dataclass(frozen=True)
class Label:
    title: str
    level: int  # 1-6 for Markdown headings, LABEL_LEVEL for label lines
    rest: str  # text after the label on its line


@dataclass(frozen=True)
class ItemSection:
    kinds: tuple[ItemKind, ...]
    start: int  # the label line
    end: int
    level: int
    inline: Line | None = None  # text on the label's own line ("Decision: ...")
    owner: str | None = None  # a sub-heading naming a person ("### Dana" under "## Action items")


def label(line: str) -> Label | None:
    """The heading or label a line is, else None."""
    if heading := ATX_HEADING.match(line):
        return Label((heading["title"] or "").strip(), len(line.lstrip().split(None, 1)[0]), "")
    found = BOLD_LABEL.match(line) or PLAIN_LABEL.match(line.strip())
    if found is None:
        bare = line.strip().rstrip(":").strip()
        # "DECISIONS" or "Action items" alone on a line of plain notes
        is_title = bare and bare[-1] not in ".!?" and len(bare) <= 40 and title_kinds(bare)
        return Label(bare, LABEL_LEVEL, "") if is_title else None
    title, rest = found["title"].strip(), found["rest"].strip()
    if title_kinds(title):
        return Label(title, LABEL_LEVEL, rest)
    # "Attendees:" or "**Budget**" alone ends the section above; "Dana: send the BOM" is a line of it.
    return Label(title, LABEL_LEVEL, "") if not rest else None


def lines_of(body: str, start: int, end: int) -> Iterator[Line]:
    offset = start
    for text in body[start:end].split("\n"):
        yield Line(offset, offset + len(text), text)
        offset += len(text) + 1


@functools.lru_cache(maxsize=4)  # the extract stage asks once per segment of the same document
def item_sections(body: str) -> tuple[ItemSection, ...]:
    """The document's item sections, in order.

    A heading or label below an item section's own heading that names no kind groups its
    lines ("### Dana", "**Firmware**") and stays part of it; any other closes it.
    """
    found: list[ItemSection] = []
    current: ItemSection | None = None
    fenced = False
    for line in lines_of(body, 0, len(body)):
        if FENCE.match(line.text):
            fenced = not fenced
            continue
        if fenced or LIST_ITEM.match(line.text) or TABLE_ROW.match(line.text):
            continue
        if line.text[:1].isspace() and not ATX_HEADING.match(line.text):
            continue  # an indented "Mitigation: ..." continues the list item above
        labelled = label(line.text)
        if labelled is None:
            continue
        kinds = title_kinds(labelled.title)
        if current is not None:
            found.append(replace(current, end=line.start))
            if not kinds and labelled.level > current.level:
                owner = labelled.title if re.fullmatch(NAME, labelled.title) and not _not_owner(labelled.title) else None
                current = ItemSection(current.kinds, line.start, len(body), current.level, owner=owner)
                continue
            current = None
        if kinds:
            inline = None
            if labelled.rest:
                lead = line.text.rfind(labelled.rest)
                inline = Line(line.start + lead, line.start + lead + len(labelled.rest), labelled.rest)
            current = ItemSection(kinds, line.start, len(body), labelled.level, inline)
    if current is not None:
        found.append(current)
    return tuple(found)


def blocks(body: str, section: ItemSection) -> list[Block]:
    """The section's items: list items, else table rows, else paragraphs (the label line excluded)."""
    lines = _outside_fences(list(lines_of(body, section.start, section.end))[1:])
    listed = _list_blocks(lines)
    table = _table_blocks(lines)
    found = listed + table if listed or table else ([] if section.inline else _paragraph_blocks(lines))
    if section.level == LABEL_LEVEL:  # a label's items run to the first line that is not one of them
        found = [b for b in found if b.start < _label_extent(lines, bool(listed or table))]
    if section.inline is not None:
        found.insert(0, Block([section.inline]))
    return sorted(found, key=lambda b: b.start)


def _label_extent(lines: Sequence[Line], listed: bool) -> int:
    """Where a label's items end: at the first prose line after its list or table, or the first blank line after its paragraph."""
    started = False
    for line in lines:
        blank = not line.text.strip()
        if listed and started and not blank and not (LIST_ITEM.match(line.text) or TABLE_ROW.match(line.text)):
            if not line.text[:1].isspace():
                return line.start
        if not listed and started and blank:
            return line.start
        started = started or not blank
    return lines[-1].end + 1 if lines else 0


def _outside_fences(lines: Sequence[Line]) -> list[Line]:
    """The lines, with fenced code blocks (fences included) turned into blank lines."""
    kept = []
    fenced = False
    for line in lines:
        fence = bool(FENCE.match(line.text))
        kept.append(Line(line.start, line.start, "") if fenced or fence else line)
        fenced = fenced != fence
    return kept


def _list_blocks(lines: Sequence[Line]) -> list[Block]:
    items = [(line, LIST_ITEM.match(line.text)) for line in lines]
    indents = [len(m["indent"].expandtabs(4)) for _, m in items if m]
    if not indents:
        return []
    top = min(indents)
    found: list[Block] = []
    current: Block | None = None
    for line, match in items:
        if match and len(match["indent"].expandtabs(4)) == top:
            current = Block([line])
            found.append(current)
        elif current is not None and line.text.strip() and (match or line.text[:1].isspace()):
            current.lines.append(line)  # a sub-item or a wrapped line of the item above
        elif not line.text.strip():
            continue
        else:
            current = None  # a paragraph after the list ends the item
    return found


TABLE_COLUMNS = {
    "text": ("task", "action", "action item", "item", "what", "description", "decision", "risk", "opportunity", "topic"),
    "owner": ("owner", "owners", "assignee", "assigned to", "who", "responsible", "person", "lead", "dri"),
    "due": ("due", "due date", "deadline", "when", "by", "by when", "target date", "date"),
    "status": ("status", "state", "done", "progress"),
    "likelihood": ("likelihood", "probability"),
    "impact": ("impact", "severity"),
    "mitigation": ("mitigation", "mitigations", "response", "plan"),
    "rationale": ("rationale", "why", "reason"),
}
COLUMN_ROLES = {name: role for role, names in TABLE_COLUMNS.items() for name in names}


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _table_blocks(lines: Sequence[Line]) -> list[Block]:
    rows = [line for line in lines if TABLE_ROW.match(line.text)]
    if len(rows) < 3 or not TABLE_RULE.match(rows[1].text):
        return []
    header = [" ".join(_plain(cell).lower().split()) for cell in _cells(rows[0].text)]
    roles = [COLUMN_ROLES.get(name.rstrip(":?")) for name in header]
    if "text" not in roles:  # the first column not named otherwise holds the item
        first_free = next((i for i, role in enumerate(roles) if role is None), None)
        if first_free is None:
            return []
        roles[first_free] = "text"
    found = []
    for row in rows[2:]:
        cells = {role: cell for role, cell in zip(roles, _cells(row.text)) if role}
        if _plain(cells.get("text", "")):
            found.append(Block([row], cells))
    return found


ITEM_LINE_START = re.compile(r"^\s*[A-Z@\d\[(☐☑✅]")
WRAP_WIDTH = 72  # hard-wrapped prose fills its lines to about this width


def _paragraph_blocks(lines: Sequence[Line]) -> list[Block]:
    """Paragraphs; in a paragraph, a line starting a new sentence after a short or finished line is an item of its own."""
    found: list[Block] = []
    current: Block | None = None
    for line in lines:
        previous = current.lines[-1].text.rstrip() if current is not None else ""
        new_line_item = bool(ITEM_LINE_START.match(line.text)) and (len(previous) < WRAP_WIDTH or previous[-1:] in ".!?")
        if not line.text.strip():
            current = None
        elif current is None or new_line_item:
            current = Block([line])
            found.append(current)
        else:
            current.lines.append(line)
    return found


# --- one block -> one item -----------------------------------------------------------------

NAME = r"[A-Z][\w'’.-]*(?:\s+[A-Z][\w'’.-]*){0,2}"
HANDLE = r"@(?P<handle>[\w.-]+)"
NOT_OWNERS = cues.NOT_NAMES | {
    "All", "Team", "Everybody", "TBD", "TBC", "Note", "Notes", "Owner", "Due", "Status", "Update", "Done", "Todo",
    "Action", "Decision", "Risk", "Next", "Follow", "Please", "Need", "Ask", "Check", "Send", "Review", "Make",
    "Get", "Set", "Add", "Fix", "Write", "Draft", "Schedule", "Book", "Confirm", "Share", "Prepare",
    "Follow-up", "Q1", "Q2", "Q3", "Q4", "I", "Me", "Us", "The", "A", "An", "Our", "My", "Re", "FYI",
    # imperatives that take "to" ("Talk to legal"), and dates, are no one's name
    "Talk", "Speak", "Reach", "Reply", "Respond", "Move", "Switch", "Go", "Remember", "Try", "Plan", "Want", "Start",
    "Continue", "Return", "Report", "Listen", "Push", "Escalate", "Forward", "Link", "Point", "Submit", "Upload",
    "Post", "Email", "Ping", "Invite", "Introduce", "Assign", "Delegate", "Hand", "Give", "Explain", "Present",
    "Propose", "Suggest", "Commit", "Migrate", "Upgrade", "Compare", "Attach", "Decide", "Agree", "Stick",
    "Tomorrow", "Today", "EOD", "EOW", "Mid", "End", "Early", "Late", "ASAP", "Ongoing", "Open", "Closed", "Blocked",
    *calendar.day_name, *calendar.day_abbr, *calendar.month_name[1:], *calendar.month_abbr[1:],
}  # fmt: skip
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


def _plain(text: str) -> str:
    """Markdown markup off: links to their text, emphasis and code marks removed, whitespace normalised."""
    return " ".join(EMPHASIS.sub("", LINK.sub(r"\1", text)).split())


def _not_owner(name: str) -> bool:
    return name.split()[0] in NOT_OWNERS or name in NOT_OWNERS


def _owner_name(match: re.Match[str]) -> str | None:
    name = match["handle"] if match.groupdict().get("handle") else match.groupdict().get("name")
    return None if not name or _not_owner(name) else name


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
        if re.fullmatch(rf"@?{NAME}", part.strip().rstrip(".")) and not _not_owner(part.strip().lstrip("@")):
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
        texts.append(_plain(text))
    if block.cells:
        head = _plain(block.cells.get("text", ""))
        cells = {role: _plain(value) for role, value in block.cells.items()}
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
