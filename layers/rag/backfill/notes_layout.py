"""The layout of meeting notes: which labels name a kind of item, where their sections run, and the blocks in them.

A section starts at a label whose title names a kind (a Markdown heading, a bold line, a line that is only the label
and a colon) and runs to the next heading or label line; its blocks are its top-level list items (with their wrapped
lines and sub-items), the rows of a table whose header names its columns, or else its paragraphs. What each block
says (owner, due date, status) is read by rag.backfill.sections.
"""

from __future__ import annotations

import calendar
import functools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace

from rag.backfill import task_cues
from rag.backfill.models import ItemKind

# --- which titles name which kind --------------------------------------------------------

TITLE_KINDS: dict[str, ItemKind] = {
    **dict.fromkeys(
        ("decision", "decisions", "decision log", "agreed", "agreement", "agreements", "resolution", "resolutions",
         "conclusion", "conclusions", "what we decided", "what we agreed", "decided", "outcome", "outcomes"), "decision"),
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
        # "Key decisions", "Risks raised", and "Agreed today": a qualifier may be the kind's own word
        trimmed = TRAILING_QUALIFIERS.sub("", part)
        kind = next(
            (
                TITLE_KINDS[t]
                for t in (part, trimmed, TRAILING_QUALIFIERS.sub("", LEADING_QUALIFIERS.sub("", part)))
                if t in TITLE_KINDS
            ),
            None,
        )
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


# Who a line names as its owner: a capitalized name of up to three words, not a word of the notes' own vocabulary.
NAME = r"[A-Z][\w'’.-]*(?:\s+[A-Z][\w'’.-]*){0,2}"
NOT_OWNERS = task_cues.NOT_NAMES | {
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


def plain(text: str) -> str:
    """Markdown markup off: links to their text, emphasis and code marks removed, whitespace normalised."""
    return " ".join(EMPHASIS.sub("", LINK.sub(r"\1", text)).split())


def not_an_owner(name: str) -> bool:
    return name.split()[0] in NOT_OWNERS or name in NOT_OWNERS


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
                owner = labelled.title if re.fullmatch(NAME, labelled.title) and not not_an_owner(labelled.title) else None
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
    header = [" ".join(plain(cell).lower().split()) for cell in _cells(rows[0].text)]
    roles = [COLUMN_ROLES.get(name.rstrip(":?")) for name in header]
    if "text" not in roles:  # the first column not named otherwise holds the item
        first_free = next((i for i, role in enumerate(roles) if role is None), None)
        if first_free is None:
            return []
        roles[first_free] = "text"
    found = []
    for row in rows[2:]:
        cells = {role: cell for role, cell in zip(roles, _cells(row.text)) if role}
        if plain(cells.get("text", "")):
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
