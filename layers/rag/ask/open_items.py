"""What is still open: "Which risks are still open?", "What are the open action items?".

No sentence of a meeting lists what is open after every meeting; the project's brief does
(``rag.search.brief.standing_items``): the risks no later meeting closed and the tasks no later meeting reported
done or cancelled. Without a chat model ``open_items_answer`` answers these questions from it, one cited line an
item, newest meeting first (tasks by owner, overdue first); ``asked_for_open`` tells them from other questions.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from rag.ask.tool_context import ToolContext
from rag.ask.tool_passages import item_passage
from rag.search.brief import one_line

MAX_LINES = 15
_STILL = r"(?:open|outstanding|unresolved|pending|remaining|left|still|not\s+(?:yet\s+)?(?:closed|done|resolved))"
_RISKS = re.compile(
    rf"\b(?:which|what)\b[^?]*\b(?:risks?|concerns?)\b[^?]*\b{_STILL}\b|\b(?:open|outstanding|remaining)\s+risks?\b", re.I
)
_TASKS = re.compile(
    rf"\b(?:which|what)\b[^?]*\b(?:tasks?|action\s+items?|actions|to-?dos?)\b[^?]*\b{_STILL}\b"
    r"|\b(?:open|outstanding|remaining)\s+(?:tasks?|action\s+items?|actions|to-?dos?)\b",
    re.I,
)


def asked_for_open(question: str) -> str | None:
    """``risk`` or ``task`` when ``question`` asks what of that kind is still open, else None (no statement run)."""
    return "risk" if _RISKS.search(question) else "task" if _TASKS.search(question) else None


def open_items_answer(ctx: ToolContext, projects: tuple[str, ...], kind: str, today: date) -> tuple[str, int] | None:
    """A cited listing of the open risks or tasks (``kind``) of ``projects``; None when there are none."""
    from rag.search.brief import standing_items

    lines: list[str] = []
    for project in projects:
        standing = standing_items(ctx.conn, ctx.tenant_id, project, today=today, limit=MAX_LINES)
        if kind == "risk":
            lines += [_risk_line(ctx, risk) for risk in standing["risks"]]
        else:
            lines += [_task_line(ctx, task) for group in standing["tasks_by_owner"] for task in group["tasks"]]
    if not lines:
        return None
    title = "Open risks" if kind == "risk" else "Open tasks"
    more = f"\n({len(lines) - MAX_LINES} more not listed)" if len(lines) > MAX_LINES else ""
    return f"{title}, as the later meetings left them:\n" + "\n".join(lines[:MAX_LINES]) + more, len(lines)


def _risk_line(ctx: ToolContext, risk: dict[str, Any]) -> str:
    who = ", ".join(risk["speakers"] or ())
    n = ctx.citations.add(item_passage(risk, "risk"))
    return f'- {risk["meeting_date"]}{f" ({who})" if who else ""}: "{ctx.redact(one_line(risk["description"]))}" [{n}]'


def _task_line(ctx: ToolContext, task: dict[str, Any]) -> str:
    due = f", due {task['due_date']}{' (overdue)' if task['overdue'] else ''}" if task["due_date"] else ""
    n = ctx.citations.add(item_passage(task, "task"))
    return f'- {task["assignee"] or "no owner named"}{due}: "{ctx.redact(one_line(task["description"]))}" [{n}]'
