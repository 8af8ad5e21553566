"""Questions a listing answers, not quoted sentences: tasks due in a period, and what changed since a date.

"Which tasks are due in May?", "What changed since the first meeting?" and "What changed at the
go/no-go review?" (``rag.ask.meeting_changes``) ask for every item of a kind in a period; no sentence says that, so a search for similar sentences answers them
badly. Without a chat model, ``listing_answer`` recognises these shapes of question and
answers from ``rag.search.tasks`` and ``rag.search.changes``: one cited line per item, dated,
with its owner and status. Anything else (or a question whose period it cannot read, or that
finds nothing) is left to the extractive answer: it returns ``None``.
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Any

from rag.ask.tool_context import ToolContext
from rag.ask.tool_passages import item_passage
from rag.search.brief import one_line

MAX_PROJECTS = 5  # a question over more projects than this is left to the search
MAX_LINES = 15

MONTHS = {
    name: number
    for number, names in enumerate(
        (("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
         ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
         ("december", "dec")),
        start=1,
    )
    for name in names
}  # fmt: skip
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_ISO = r"(?P<iso>\d{4}-\d{2}-\d{2})"
_MONTH_DAY = rf"(?P<month>{_MONTH})\.?(?:\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?)?(?:,?\s+(?P<year>\d{{4}}))?"
_DAY_MONTH = rf"(?P<day2>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<month2>{_MONTH})(?:,?\s+(?P<year2>\d{{4}}))?"
WHEN = rf"(?:{_ISO}|{_DAY_MONTH}|{_MONTH_DAY})\b"

# A question asking for a list ("which tasks...", "what changed..."), not about one thing ("when is the report due...").
_ASKS_FOR_A_LIST = re.compile(
    r"^\W*(?:which|what|list|show|tell me|are there|is there|anything|any|give me|summari[sz]e)\b", re.IGNORECASE
)
_TASKS = re.compile(r"\b(?:tasks?|action items?|to-?dos?|deliverables?|due|deadlines?)\b", re.IGNORECASE)
_DUE = re.compile(rf"\b(?:due|deadlines?)\b[^?.]*?\b(?P<how>in|during|by|before|on|after|until)\s+{WHEN}", re.IGNORECASE)
_CHANGED = re.compile(r"\b(?:changed?|changes|new|happened|updates?|moved on|progress)\b", re.IGNORECASE)
_SINCE = re.compile(
    rf"\bsince\s+(?:(?P<first>the\s+(?:first|kick-?off)(?:\s+meeting)?|(?:the\s+)?kick-?off)|{WHEN})", re.IGNORECASE
)
_LAST = re.compile(r"\b(?:in|over|during)\s+the\s+(?:last|past)\s+(?P<n>\d{1,3}|two|three|four)\s+(?P<unit>days?|weeks?)\b", re.I)
_WORD_NUMBERS = {"two": 2, "three": 3, "four": 4}
# "What changed at the go/no-go review?", "... at the meeting on 9 April?", "... at the December meeting?"
_AT_MEETING = re.compile(r"\b(?:at|in|during|from)\s+(?:the\s+|our\s+|last\s+)?(?P<meeting>[^?]{3,80}?)\s*\??\s*$", re.I)


def listing_answer(ctx: ToolContext, question: str, today: date) -> tuple[str, int] | None:
    """A cited listing answering ``question`` (text, items) if it asks for tasks due in a period, what changed since a
    date or at a meeting, or what is still open (``rag.ask.open_items``)."""
    if not _ASKS_FOR_A_LIST.search(question):
        return None
    from rag.ask.open_items import asked_for_open, open_items_answer

    still_open = asked_for_open(question)
    due = _DUE.search(question) if not still_open and _TASKS.search(question) else None
    changed = not still_open and due is None and _CHANGED.search(question) is not None
    since = changed and (_SINCE.search(question) or _LAST.search(question))
    at = _AT_MEETING.search(question) if changed and not since else None
    if not (still_open or due or since or at):
        return None  # (decided before any statement: most questions cost nothing here)
    projects = _projects(ctx)
    if not projects:
        return None
    if still_open:
        return open_items_answer(ctx, projects, still_open, today)
    if at:
        from rag.ask.meeting_changes import changes_at_meeting

        return changes_at_meeting(ctx, projects, question, at.group("meeting"))
    return _tasks_due(ctx, projects, due) if due else _changes(ctx, projects, question, today)


def _projects(ctx: ToolContext) -> tuple[str, ...]:
    if ctx.project_ids:
        return ctx.project_ids if len(ctx.project_ids) <= MAX_PROJECTS else ()
    from rag.store.catalog import list_projects

    rows = list_projects(ctx.conn, ctx.tenant_id)
    return tuple(row["id"] for row in rows) if len(rows) <= MAX_PROJECTS else ()


# --- tasks due in a period -------------------------------------------------------------------------


def _tasks_due(ctx: ToolContext, projects: tuple[str, ...], due: re.Match[str]) -> tuple[str, int] | None:
    from rag.search.tasks import list_tasks

    how = due.group("how").lower()
    month, day, year = date_parts(due)
    if month is None:
        return None
    first: date | None
    last: date | None
    if day is None and year is None and how in ("in", "during", "on"):  # "due in May": in any year
        first = last = None
        period = f"in {_month_name(month)}"
    else:
        year = year or _reference_day(ctx, projects).year
        if day is None:
            start, end = date(year, month, 1), _month_end(year, month)
            label = f"{_month_name(month)} {year}"
        else:
            start = end = date(year, month, day)
            label = start.isoformat()
        first, last = {"before": (None, start - timedelta(days=1)), "after": (end + timedelta(days=1), None),
                       "by": (None, end), "until": (None, end)}.get(how, (start, end))  # fmt: skip
        period = f"{'in' if how in ('during', 'on') and day is None else how} {label}"
    rows = []
    for project in projects:
        rows += list_tasks(ctx.conn, ctx.tenant_id, project_id=project, status=None, limit=500, due_after=first, due_before=last)
    rows = [row for row in rows if row["due_date"] is not None and (first or last or row["due_date"].month == month)]
    if not rows:
        return None
    rows.sort(key=lambda row: (row["due_date"], row["assignee"] or ""))
    lines = []
    for row in rows[:MAX_LINES]:
        n = ctx.citations.add(item_passage(row, "task"))
        owner = row["assignee"] or "no owner named"
        lines.append(
            f'- {owner}, due {row["due_date"]} ({_task_status(row)}): "{ctx.redact(one_line(row["description"]))}" [{n}]'
        )
    more = f"\n({len(rows) - MAX_LINES} more not listed)" if len(rows) > MAX_LINES else ""
    return f"Tasks due {period}, as the later meetings left them:\n" + "\n".join(lines) + more, len(rows)


def _reference_day(ctx: ToolContext, projects: tuple[str, ...]) -> date:
    """The latest meeting date of ``projects``: the year a date named without one falls in."""
    row = ctx.conn.execute(
        "SELECT max(meeting_date) FROM documents WHERE tenant_id = %s AND project_id = ANY(%s)", (ctx.tenant_id, list(projects))
    ).fetchone()
    return row[0] if row and row[0] else date.today()


def _task_status(row: dict[str, Any]) -> str:
    return {"done": "done", "cancelled": "cancelled", "blocked": "blocked"}.get(row["status"], "open")


# --- what changed since ------------------------------------------------------------------------------


def _changes(ctx: ToolContext, projects: tuple[str, ...], question: str, today: date) -> tuple[str, int] | None:
    from rag.search.changes import changes_between

    sections = []
    found = 0
    for project in projects:
        since = _since(ctx, project, question, today)
        if since is None:
            continue
        changes = changes_between(ctx.conn, ctx.tenant_id, project, since=since, limit=MAX_LINES)
        lines = change_lines(ctx, changes)
        if lines:
            found += sum(len(items) for items in changes.values())
            title = f"{project}, meetings from {since} on" if len(projects) > 1 else f"Meetings from {since} on"
            sections.append(f"{title}:\n" + "\n".join(lines[:MAX_LINES]))
    if not sections:
        return None
    return "What changed, as the meetings recorded it:\n" + "\n\n".join(sections), found


def _since(ctx: ToolContext, project: str, question: str, today: date) -> date | None:
    if last := _LAST.search(question):
        n = _WORD_NUMBERS.get(last.group("n").lower()) or int(last.group("n"))
        return today - timedelta(days=n * (7 if last.group("unit").lower().startswith("week") else 1))
    since = _SINCE.search(question)
    if since is None:
        return None
    if since.group("first"):  # after the first meeting: from the day after it
        first = ctx.conn.execute(
            "SELECT min(meeting_date) FROM documents WHERE tenant_id = %s AND project_id = %s", (ctx.tenant_id, project)
        ).fetchone()
        return first[0] + timedelta(days=1) if first and first[0] else None
    month, day, year = date_parts(since)
    if month is None:
        return None
    if year is None:  # the latest such day up to the project's latest meeting
        latest = _reference_day(ctx, (project,))
        year = latest.year if (month, day or 1) <= (latest.month, latest.day) else latest.year - 1
    return date(year, month, day or 1)


def change_lines(ctx: ToolContext, changes: dict[str, list[dict[str, Any]]]) -> list[str]:
    lines: list[str] = []

    def cite(item: dict[str, Any], type_name: str) -> str:
        return f"[{ctx.citations.add(item_passage(item, type_name))}]"

    def said(item: dict[str, Any], text: str | None = None) -> str:
        who = ", ".join(item["speakers"] or ())
        return f'{item["meeting_date"]}{f" ({who})" if who else ""}: "{ctx.redact(one_line(text or item["description"]))}"'

    for item in changes["decisions_made"]:
        replaced = "".join(
            f'; this replaced the decision of {ref["meeting_date"]}: "{ctx.redact(one_line(ref["description"]))}" '
            f"{cite(ref, 'decision')}"
            for ref in item["supersedes"]
        )
        later = " (itself superseded later)" if item["status"] == "superseded" else ""
        lines.append(f"- Decided {said(item)} {cite(item, 'decision')}{replaced}{later}")
    kinds = (("risks_closed", "Risk closed", "risk"), ("tasks_done", "Task done", "task"),
             ("tasks_cancelled", "Task cancelled", "task"), ("tasks_handed_over", "Task handed over", "task"),
             ("tasks_rescheduled", "Task rescheduled", "task"))  # fmt: skip
    for category, label, kind in kinds:
        for item in changes[category]:
            target = item.get("target")
            what = (
                f'; the {kind} of {target["meeting_date"]}: "{ctx.redact(one_line(target["description"]))}" {cite(target, kind)}'
                if target
                else ""
            )
            to = f" to {item['new_value']}" if item.get("new_value") else ""
            lines.append(f"- {label}{to} {said(item, item['evidence'])} {cite(item, 'chunk')}{what}")
    for item in changes["tasks_assigned"]:
        owner = f" for {item['assignee']}" if item["assignee"] else ""
        due = f", due {item['due_date']}" if item["due_date"] else ""
        lines.append(f"- New task{owner}{due} (now {_task_status(item)}) {said(item)} {cite(item, 'task')}")
    for item in changes["risks_raised"]:
        lines.append(f"- Risk raised{' (since closed)' if item['status'] == 'closed' else ''} {said(item)} {cite(item, 'risk')}")
    return lines


# --- dates -------------------------------------------------------------------------------------------


def date_parts(match: re.Match[str]) -> tuple[int | None, int | None, int | None]:
    """(month, day, year) of a matched date; a missing part is None."""
    groups = match.groupdict()
    if groups.get("iso"):
        try:
            when = date.fromisoformat(groups["iso"])
        except ValueError:
            return None, None, None
        return when.month, when.day, when.year
    month = groups.get("month") or groups.get("month2")
    day = groups.get("day") or groups.get("day2")
    year = groups.get("year") or groups.get("year2")
    if month is None:
        return None, None, None
    number = MONTHS[month.lower()]
    if day is not None and not 1 <= int(day) <= _month_end(int(year) if year else 2000, number).day:
        return None, None, None
    return number, int(day) if day else None, int(year) if year else None


def _month_end(year: int, month: int) -> date:
    return (date(year + month // 12, month % 12 + 1, 1)) - timedelta(days=1)


def _month_name(month: int) -> str:
    return next(name for name, number in MONTHS.items() if number == month).capitalize()
