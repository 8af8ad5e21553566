"""What later meetings said of a task or risk an extractive answer quotes, each statement cited to its own meeting.

"Is the memory budget still a problem?" and "When was the tagging finished?" are answered where a
later meeting closed the risk or reported the task done, not where it was raised. So a quoted task or
risk (the extracted item, or the transcript sentence it came from) is followed by the statements
``rag.store.timeline`` linked to it: closed, done, cancelled, handed over, moved. The statements come
from ``knowledge_changes``, in meeting order, at most ``MAX_PER_ITEM`` of each item (the latest).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from rag.ask.tool_passages import item_passage
from rag.search.brief import one_line

if TYPE_CHECKING:
    from rag.ask.tool_context import ToolContext

MAX_PER_ITEM = 2
# knowledge_changes.change -> how the answer says it
SAID = {"closed": "Closed", "done": "Reported done", "cancelled": "Cancelled", "reassigned": "Handed over",
        "rescheduled": "Moved"}  # fmt: skip


def later_changes(ctx: ToolContext, items: Iterable[tuple[str, int]]) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """Each (kind, id) of a task or risk -> the statements that changed it, oldest first (the latest ``MAX_PER_ITEM``)."""
    wanted = sorted(set(items))
    if not wanted:
        return {}
    from psycopg.rows import dict_row

    with ctx.conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(
            """SELECT c.target_kind, c.target_id, c.change, c.new_value, c.evidence AS description,
                      d.id::text AS document_id, d.source_uri, d.title AS source_title, d.meeting_date,
                      c.start_char, c.end_char, c.start_turn, c.end_turn, c.speakers
                 FROM knowledge_changes c JOIN documents d ON d.id = c.document_id AND d.tenant_id = c.tenant_id
                WHERE c.tenant_id = %s AND (c.target_kind, c.target_id) IN (SELECT * FROM unnest(%s::text[], %s::bigint[]))
                ORDER BY d.meeting_date NULLS FIRST, c.start_char, c.id""",
            (ctx.tenant_id, [kind for kind, _ in wanted], [id_ for _, id_ in wanted]),
        ).fetchall()
    found: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for row in rows:
        found.setdefault((row["target_kind"], row["target_id"]), []).append(row)
    return {key: statements[-MAX_PER_ITEM:] for key, statements in found.items()}


def change_line(ctx: ToolContext, statement: dict[str, Any]) -> str:
    """``- Closed 2026-06-29 (Ravi Shah): "I'd call the memory problem closed." [4]``"""
    n = ctx.citations.add(item_passage(statement, "chunk"))
    # A risk ends closed, whether said so or by what happened ("The fibre went live on the 1st").
    change = "closed" if statement["target_kind"] == "risk" else statement["change"]
    what = SAID.get(change, change.capitalize())
    to = f" to {statement['new_value']}" if statement.get("new_value") else ""
    day = f" {statement['meeting_date'].isoformat()}" if statement.get("meeting_date") else ""
    who = ", ".join(statement["speakers"] or ())
    return f'  - {what}{to}{day}{f" ({who})" if who else ""}: "{ctx.redact(one_line(statement["description"]))}" [{n}]'
