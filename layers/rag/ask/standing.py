"""Where an extracted item stands after every meeting, as answers show it: current before superseded.

A decision is ``current``, or ``superseded by [n]`` when the decision that replaced it is among
the passages handed out, else ``superseded on <date of the replacing meeting>``; a risk is
``open`` or ``closed``; a task its status and due date (``open, due 2026-03-02``), as later
meetings left them (``rag.store.timeline``). Ranking rule: superseded decisions go after
every other passage found, the latest meeting's first, the order otherwise kept, so none
outranks the decision that replaced it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg

    from rag.search.engine import Hit

TIMED_TYPES = ("decision", "risk", "task")


@dataclass(frozen=True)
class Decision:
    id: int
    status: str
    superseded_by: int | None
    meeting_date: date | None
    item: dict[str, Any]  # the fields ``rag.ask.tool_passages.item_passage`` cites, and ``description``


def superseded(type_name: str, metadata: dict[str, Any] | None) -> bool:
    return type_name == "decision" and (metadata or {}).get("status") == "superseded"


def current_first(hits: Sequence[tuple[str, Hit]]) -> list[tuple[str, Hit]]:
    """The hits with superseded decisions moved after all others, latest meeting first (a stable sort: ranks otherwise kept).

    A decision is replaced by one of the same or a later meeting, so no superseded decision
    outranks the one that replaced it, whether that one is current or superseded in turn.
    """

    def key(hit: tuple[str, Hit]) -> tuple[bool, int]:
        if not superseded(hit[0], hit[1].metadata):
            return (False, 0)
        day = (hit[1].metadata or {}).get("meeting_date")
        return (True, -date.fromisoformat(day).toordinal() if isinstance(day, str) else 0)

    return sorted(hits, key=key)


def standing(
    type_name: str, metadata: dict[str, Any] | None, *, replaced_on: date | None = None, replaced_by: str | None = None
) -> str | None:
    """``current``, ``superseded by [3]``, ``superseded on 2026-02-09``, ``open``, ``done, due 2026-03-02``...; None: not timed."""
    fields = metadata or {}
    status = fields.get("status")
    if type_name == "decision":
        if status != "superseded":
            return "current"
        if replaced_by:
            return f"superseded by {replaced_by}"
        return f"superseded on {replaced_on.isoformat()}" if replaced_on else "superseded"
    if type_name == "risk":
        return str(status or "open")
    if type_name == "task":
        due = fields.get("due_date")
        return f"{status or 'open'}{f', due {due}' if due else ''}"
    return None


def label(type_name: str, speakers: Iterable[str], state: str | None, day: date | None) -> str:
    """``Dana Kim (task, open, due 2026-03-02), 2026-01-12: `` -- who said it, what it is now, when."""
    who = ", ".join(s for s in speakers if s)
    what = f"{type_name}, {state}" if state else type_name
    head = f"{who} ({what})" if who else f"{type_name.capitalize()} ({state})" if state else type_name.capitalize()
    return f"{head}{', ' + day.isoformat() if day else ''}: "


_HISTORY = """
WITH RECURSIVE later(id) AS (
    SELECT unnest(%(ids)s::bigint[])
    UNION SELECT k.superseded_by FROM decisions k JOIN later ON k.id = later.id
          WHERE k.tenant_id = %(tenant)s AND k.superseded_by IS NOT NULL
), chain(id) AS (
    SELECT id FROM later
    UNION SELECT k.id FROM decisions k JOIN chain ON k.superseded_by = chain.id WHERE k.tenant_id = %(tenant)s
)
SELECT k.id, k.status, k.superseded_by, k.description, k.document_id::text, k.start_char, k.end_char, k.start_turn,
       k.end_turn, k.speakers, d.meeting_date, d.source_uri, d.title
FROM decisions k JOIN documents d ON d.id = k.document_id
WHERE k.tenant_id = %(tenant)s AND k.id IN (SELECT id FROM chain)
"""


def decision_history(conn: psycopg.Connection, tenant_id: str, ids: Iterable[int]) -> dict[int, Decision]:
    """The decisions ``ids``, the ones that replaced them up to the current one, and the ones each replaced."""
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    history = {}
    for row in conn.execute(_HISTORY, {"ids": wanted, "tenant": tenant_id}).fetchall():
        id_, status, by, description, document, start, end, start_turn, end_turn, speakers, day, uri, title = row
        item = {
            "description": description, "document_id": document, "source_uri": uri, "source_title": title,
            "start_char": start, "end_char": end, "start_turn": start_turn, "end_turn": end_turn,
            "speakers": list(speakers or ()), "meeting_date": day,
        }  # fmt: skip
        history[id_] = Decision(id_, status, by, day, item)
    return history


def chain(history: dict[int, Decision], decision_id: int) -> tuple[Decision, list[Decision]] | None:
    """The current decision that ``decision_id`` leads to and every one it replaced, latest first; None: unknown."""
    if decision_id not in history:
        return None
    current, seen = history[decision_id], {decision_id}
    while current.superseded_by in history and current.superseded_by not in seen:
        seen.add(current.superseded_by)
        current = history[current.superseded_by]
    replaced: list[Decision] = []
    frontier = [current.id]
    while frontier:  # every decision that led to the current one, however many steps back
        before = [d for d in history.values() if d.superseded_by in frontier and d.id != current.id and d not in replaced]
        replaced += before
        frontier = [d.id for d in before]
    replaced.sort(key=lambda d: d.meeting_date or date.min, reverse=True)
    return current, replaced


def replaced_on(history: dict[int, Decision], decision_id: int) -> date | None:
    """The meeting date of the decision that replaced ``decision_id`` (None: current or unknown)."""
    decision = history.get(decision_id)
    by = history.get(decision.superseded_by) if decision and decision.superseded_by is not None else None
    return by.meeting_date if by else None


def standings(
    conn: psycopg.Connection, tenant_id: str, hits: Sequence[tuple[str, Hit]], cite_as: dict[int, str] | None = None
) -> list[str | None]:
    """The standing of each hit (None: no status); ``cite_as``: the decisions handed out, by row id."""
    history = decision_history(conn, tenant_id, [hit.id for type_name, hit in hits if superseded(type_name, hit.metadata)])
    shown = []
    for type_name, hit in hits:
        by = (hit.metadata or {}).get("superseded_by")
        replacer = (cite_as or {}).get(by) if isinstance(by, int) else None
        shown.append(standing(type_name, hit.metadata, replaced_on=replaced_on(history, hit.id), replaced_by=replacer))
    return [state if type_name in TIMED_TYPES else None for state, (type_name, _) in zip(shown, hits)]


def time_rule(today: date) -> str:
    """What a model is told about time (``/v1/ask``'s system prompt, the MCP server's instructions)."""
    return (
        f"Today is {today.isoformat()}. Every passage carries its meeting date, and an extracted item its status as "
        "later meetings left it: a later meeting overrides an earlier one. When it matters, say so (what changed, "
        "and in which meeting). A superseded decision is history: never present it as current; give the decision "
        "that replaced it, and mention the superseded one only as what it replaced."
    )
