"""What changed at one meeting: "What changed at the go/no-go review?", "... at the meeting on 9 April?".

The meeting is named by its date ("on 9 April", "the December meeting": the latest of that month) or by words
of its title or file name ("the go/no-go review"); the answer lists what that meeting decided (and what each
decision replaced), closed, completed, handed over, rescheduled, assigned and raised, as ``rag.ask.listings``
lists changes since a date. "What changed about the opening date at ...?" lists the lines on that subject first.
Nothing recognised, or nothing recorded: ``None``, and the extractive answer takes the question.
"""

from __future__ import annotations

import re
from datetime import date
from pathlib import PurePosixPath

from rag.ask.listings import MAX_LINES, WHEN, change_lines, date_parts
from rag.ask.tool_context import ToolContext

# A phrase names a meeting when it says what kind of meeting, or when.
_MEETING_NOUN = re.compile(
    r"\b(?:meeting|call|review|session|sync|workshop|kick-?off|retro\w*|stand-?up|check-?in|walk-?through|phone-?in|"
    r"hearing|vote|briefing|planning|sign-?off|catch-?up|notes|minutes)\b",
    re.I,
)
_ABOUT = re.compile(r"\babout\s+(?:the\s+)?(?P<subject>.+?)\s+(?:at|in|during|from)\b", re.I)
_NOT_TITLE_WORDS = frozenset({"the", "a", "an", "our", "last", "meeting", "call", "on", "of", "with", "and"})
_WORD = re.compile(r"[a-z0-9]+")


def changes_at_meeting(ctx: ToolContext, projects: tuple[str, ...], question: str, phrase: str) -> tuple[str, int] | None:
    """A cited listing of what the meeting ``phrase`` names changed, in each of ``projects``; None when none is named."""
    from rag.search.changes import changes_between

    if not _MEETING_NOUN.search(phrase) and not re.search(WHEN, phrase, re.I):
        return None
    about = _ABOUT.search(question)
    subject = _words(about.group("subject")) - _NOT_TITLE_WORDS if about else frozenset()
    sections, found = [], 0
    for project in projects:
        meeting = _meeting(ctx, project, phrase)
        if meeting is None:
            continue
        day, title = meeting
        changes = changes_between(ctx.conn, ctx.tenant_id, project, since=day, until=day, limit=MAX_LINES)
        lines = change_lines(ctx, changes)
        if subject:  # the lines on the subject asked about first, the rest after them
            lines.sort(key=lambda line: not (_words(line) & subject))
        if lines:
            found += sum(len(items) for items in changes.values())
            where = f"{project}, " if len(projects) > 1 else ""
            sections.append(f"{where}the meeting of {day} ({title}):\n" + "\n".join(lines[:MAX_LINES]))
    if not sections:
        return None
    return "What changed at " + "\n\n".join(sections), found


def _meeting(ctx: ToolContext, project: str, phrase: str) -> tuple[date, str] | None:
    """The dated meeting of ``project`` that ``phrase`` names, and its title: by date, else by most title words."""
    rows = ctx.conn.execute(
        """SELECT meeting_date, coalesce(title, ''), source_uri FROM documents
           WHERE tenant_id = %s AND project_id = %s AND meeting_date IS NOT NULL
           ORDER BY meeting_date, created_at LIMIT 1000""",
        (ctx.tenant_id, project),
    ).fetchall()
    when = re.search(WHEN, phrase, re.I)
    if when:
        month, day, year = date_parts(when)
        on = [(d, t) for d, t, _ in rows if d.month == month and day in (None, d.day) and year in (None, d.year)]
        return on[-1] if on else None
    wanted = _words(phrase) - _NOT_TITLE_WORDS
    scored = [(len(wanted & _words(f"{title} {PurePosixPath(uri).stem}")), d, title) for d, title, uri in rows]
    best = max(scored, default=None, key=lambda row: (row[0], row[1]))
    return (best[1], best[2]) if best and best[0] > 0 else None


def _words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower()))
