"""A project's brief: where it stands after every meeting, each line cited to its meeting and turns.

The current decisions (superseded ones left out), the open risks, the open tasks grouped by
owner (overdue first, then soonest due, undated last; "overdue" is against ``today``) and what
changed in the last ``days`` days (``rag.search.changes``). ``brief_markdown`` writes the same
brief as Markdown, each line ending with its citation.
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

from rag.search.changes import changes_between, is_empty

if TYPE_CHECKING:
    import psycopg

DEFAULT_DAYS = 14
MAX_ITEMS = 100  # per section

_CURRENT = """
SELECT k.id::text AS id, k.description, k.status, {extra}
       d.id::text AS document_id, d.source_uri, d.title AS source_title, d.meeting_date,
       k.start_char, k.end_char, k.start_turn, k.end_turn, k.speakers, k.evidence
  FROM {table} k JOIN documents d ON d.id = k.document_id AND d.tenant_id = k.tenant_id
 WHERE k.tenant_id = %(tenant)s AND k.project_id = %(project)s AND k.status = %(status)s
 ORDER BY d.meeting_date DESC NULLS LAST, k.start_char, k.id
 LIMIT %(limit)s"""


def project_brief(
    conn: psycopg.Connection,
    tenant_id: str,
    project_id: str,
    *,
    today: date,
    days: int = DEFAULT_DAYS,
    since: date | None = None,
    limit: int = MAX_ITEMS,
) -> dict[str, Any]:
    """The brief of one project of ``tenant_id`` as of ``today`` (newest meetings first in each list).

    What changed covers meetings from ``since``, by default ``days`` before ``today``.
    """
    since = since or today - timedelta(days=days)
    return {
        "project_id": project_id,
        "today": today,
        "since": since,
        **standing_items(conn, tenant_id, project_id, today=today, limit=limit),
        "changes": changes_between(conn, tenant_id, project_id, since=since, until=today, limit=limit),
    }


def standing_items(conn: psycopg.Connection, tenant_id: str, project_id: str, *, today: date, limit: int) -> dict[str, Any]:
    """Where the project stands: its current decisions, open risks and open tasks by owner (``overdue`` against ``today``)."""
    from psycopg.rows import dict_row

    from rag.search.tasks import list_tasks

    scope = {"tenant": tenant_id, "project": project_id, "limit": limit}
    with conn.cursor(row_factory=dict_row) as cur:
        decisions = cur.execute(
            _CURRENT.format(table="decisions", extra="k.owner,"), {**scope, "status": "current"}, prepare=False
        ).fetchall()
        risks = cur.execute(
            _CURRENT.format(table="risks", extra="k.category, k.likelihood, k.impact, k.mitigation,"),
            {**scope, "status": "open"},
            prepare=False,
        ).fetchall()
    tasks = list_tasks(conn, tenant_id, project_id=project_id, status="open", limit=limit)
    return {
        "decisions": decisions,
        "risks": risks,
        "tasks_by_owner": _by_owner(tasks, today),
        "overdue_tasks": sum(1 for t in tasks if _overdue(t, today)),
    }


def _overdue(task: dict[str, Any], today: date) -> bool:
    return task["due_date"] is not None and task["due_date"] < today


def _by_owner(tasks: list[dict[str, Any]], today: date) -> list[dict[str, Any]]:
    """Tasks (already soonest due first) grouped by owner; the owner whose first task is most urgent first, nobody's last."""
    groups: dict[str | None, list[dict[str, Any]]] = {}
    for task in tasks:
        fields = {k: v for k, v in task.items() if k != "changes"}
        groups.setdefault(task["assignee"], []).append({**fields, "overdue": _overdue(task, today)})
    owners = sorted(groups, key=lambda owner: owner is None)  # stable: the dict keeps the urgency order
    return [{"owner": owner, "tasks": groups[owner]} for owner in owners]


# --- Markdown --------------------------------------------------------------------------------


def cite(item: dict[str, Any]) -> str:
    """Where an item was said: ``[source, meeting date, turns a-b (speakers)]``."""
    named = item.get("source") or {"title": item.get("source_title"), "uri": item.get("source_uri")}  # API or library
    source = named["title"] or named["uri"] or item.get("document_id")
    parts = [str(source)]
    if item.get("meeting_date"):
        parts.append(str(item["meeting_date"]))
    if item.get("start_turn") is not None:
        turns = item["start_turn"], item["end_turn"]
        parts.append(f"turn {turns[0]}" if turns[0] == turns[1] else f"turns {turns[0]}-{turns[1]}")
    else:
        parts.append(f"chars {item['start_char']}-{item['end_char']}")
    speakers = ", ".join(item.get("speakers") or ())
    return f"[{'; '.join(parts)}{f' ({speakers})' if speakers else ''}]"


def one_line(text: str) -> str:
    """``text`` on one line, without the bullet a notes line starts with."""
    return re.sub(r"^[-*]\s+", "", " ".join(text.split()))


def _line(text: str, item: dict[str, Any], indent: str = "") -> str:
    return f"{indent}- {one_line(text)} {cite(item)}"


# What a later meeting's statement says, before its quote: (section title, prefix of the line).
_STATEMENTS = (
    ("risks_closed", "Risks closed", "the risk"), ("tasks_done", "Tasks done", "the task"),
    ("tasks_cancelled", "Tasks cancelled", "the task"), ("tasks_handed_over", "Tasks handed over", "the task"),
    ("tasks_rescheduled", "Tasks rescheduled", "the task"),
)  # fmt: skip


def changes_markdown(changes: dict[str, list[dict[str, Any]]]) -> list[str]:
    """The lines of a ``changes_between`` answer, one section per non-empty category; each line ends with its citation.

    A decision made lists the decisions it replaced below it (so "decisions superseded", which holds the same pairs
    seen from the other side, is not repeated); a later meeting's statement is quoted, the item it changed below it.
    """
    lines: list[str] = []
    if changes["decisions_made"]:
        lines += ["", "### Decisions made"]
        for item in changes["decisions_made"]:
            later = " (since superseded)" if item["status"] == "superseded" else ""
            lines.append(_line(item["description"] + later, item))
            lines += [_line(f"replaces: {ref['description']}", ref, "  ") for ref in item["supersedes"]]
    if changes["risks_raised"]:
        lines += ["", "### Risks raised"]
        lines += [
            _line(i["description"] + (" (since closed)" if i["status"] == "closed" else ""), i) for i in changes["risks_raised"]
        ]
    if changes["tasks_assigned"]:
        lines += ["", "### Tasks assigned"]
        lines += [_line(_assigned(item), item) for item in changes["tasks_assigned"]]
    for category, title, what in _STATEMENTS:
        if changes[category]:
            lines += ["", f"### {title}"]
        for item in changes[category]:
            to = f"to {item['new_value']}: " if item.get("new_value") else ""
            lines.append(_line(f'{to}"{one_line(item["evidence"])}"', item))
            if item.get("target"):
                lines.append(_line(f"{what}: {item['target']['description']}", item["target"], "  "))
    return lines


def _assigned(item: dict[str, Any]) -> str:
    facts = [f"owner {item['assignee']}" if item["assignee"] else "no owner named"]
    facts += [f"due {item['due_date']}"] if item["due_date"] else []
    return f"{item['description']} ({', '.join(facts)}; now {item['status']})"


def brief_markdown(brief: dict[str, Any]) -> str:
    today = brief["today"]
    lines = [f"# Project brief: {brief['project_id']}", "", f"As of {today}."]
    lines += ["", "## Current decisions"]
    lines += [_line(d["description"], d) for d in brief["decisions"]] or ["- none recorded"]
    lines += ["", "## Open risks"]
    lines += [_line(r["description"], r) for r in brief["risks"]] or ["- none open"]
    overdue = brief["overdue_tasks"]
    lines += ["", "## Open tasks" + (f" ({overdue} overdue)" if overdue else "")]
    if not brief["tasks_by_owner"]:
        lines.append("- none open")
    for group in brief["tasks_by_owner"]:
        lines += ["", f"### {group['owner'] or 'No owner named'}"]
        for task in group["tasks"]:
            due = (
                f"OVERDUE since {task['due_date']}: "
                if task["overdue"]
                else (f"due {task['due_date']}: " if task["due_date"] else "")
            )
            lines.append(_line(due + task["description"], task))
    lines += ["", f"## What changed since {brief['since']}"]
    changed = brief["changes"]
    lines += changes_markdown(changed) if not is_empty(changed) else ["- nothing recorded in meetings of this period"]
    return "\n".join(lines) + "\n"
