"""Rows of the backfill's tables (segments, decisions, risks, opportunities, tasks) written straight into SQL.

The backfill stages fill these tables in production; the search tests insert them
directly, embedded by the real local model, so that similarity means what it will mean.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Any

TABLES = {"segment": "segments", "decision": "decisions", "risk": "risks", "opportunity": "opportunities", "task": "tasks"}


@dataclass(frozen=True)
class Item:
    """One segment or extracted item; ``text`` is the description (for a segment: the summary)."""

    type: str
    document: str  # key of the document it belongs to
    text: str
    fields: dict[str, Any] = field(default_factory=dict)
    start_turn: int | None = 0
    end_turn: int | None = 1
    speakers: tuple[str, ...] = ()

    def embedding_text(self) -> str:
        # Segments are embedded as the backfill embeds them: "Topic: <title>\n<summary>".
        return f"Topic: {self.fields['title']}\n{self.text}" if self.type == "segment" else self.text


def insert_document(
    conn: Any, tenant: str, project: str, key: str, *, meeting_date: date | None = None, title: str | None = None
) -> str:
    """A transcript row (status extracted) with a body long enough for the items' character ranges."""
    row = conn.execute(
        """INSERT INTO documents (tenant_id, project_id, bucket, object_key, kind, format, title, meeting_date,
                                  body, status)
           VALUES (%s, %s, 'meetings', %s, 'transcript', 'text', %s, %s, %s, 'extracted') RETURNING id::text""",
        (tenant, project, key, title or key, meeting_date, "x" * 1000),
    ).fetchone()
    return row[0]


def insert_items(conn: Any, embedder: Any, documents: dict[str, tuple[str, str, str]], items: list[Item]) -> dict[str, int]:
    """Insert ``items`` with their vectors; ``documents`` maps a key to (document id, tenant, project). Text -> id."""
    vectors = embedder.embed([item.embedding_text() for item in items])
    ids: dict[str, int] = {}
    for n, (item, vector) in enumerate(zip(items, vectors, strict=True)):
        document_id, tenant, project = documents[item.document]
        columns = {
            "document_id": document_id, "tenant_id": tenant, "project_id": project,
            "start_turn": item.start_turn, "end_turn": item.end_turn, "start_char": 10 * n, "end_char": 10 * n + 40,
            "speakers": list(item.speakers), "embedding": vector, "embedding_model": embedder.model_id,
        }  # fmt: skip
        if item.type == "segment":
            columns |= {"segment_index": n, "summary": item.text, "method": "texttiling"}
        else:
            columns |= {"description": item.text, "evidence": f"said: {item.text}", "method": "rules"}
        columns |= item.fields
        names = ", ".join(columns)
        placeholders = ", ".join(["%s::vector" if name == "embedding" else "%s" for name in columns])
        table = TABLES[item.type]
        ids[item.text] = conn.execute(
            f"INSERT INTO {table} ({names}) VALUES ({placeholders}) RETURNING id", list(columns.values())
        ).fetchone()[0]
    return ids


# A small knowledge base about the remote control of examples/transcripts, and a secret of another tenant.
REMOTE_ITEMS = [
    Item("segment", "review", "The team compared AAA cells with a rechargeable pack and chose the pack with USB-C charging.",
         {"title": "Rechargeable battery decision"}, 0, 6, ("Maya", "Jonas", "Priya")),
    Item("segment", "standup", "The supplier confirmed delivery in the second week of March, so the launch date holds.",
         {"title": "Launch schedule"}, 0, 3, ("Jonas", "Ravi")),
    Item("decision", "review", "Switch the remote to a rechargeable battery pack with a USB-C port",
         {"rationale": "Users found replacing AAA cells the most annoying part", "owner": "Maya", "impact": "two dollars forty more per unit",
          "status": "agreed"}, 5, 7, ("Maya", "Jonas")),
    Item("decision", "standup", "The launch date stays in the second week of March",
         {"owner": "Jonas", "status": "agreed"}, 1, 2, ("Jonas",)),
    Item("risk", "review", "The cell supplier Voltacorp may not deliver the rechargeable cells before March",
         {"category": "supply", "likelihood": "medium", "impact": "high", "mitigation": "Qualify a second cell supplier"},
         8, 9, ("Jonas",)),
    Item("risk", "standup", "The new enclosure with the charging port could fail the drop test",
         {"category": "technical", "likelihood": "low", "impact": "medium", "mitigation": "Run the drop test early"},
         2, 3, ("Ravi",)),
    Item("opportunity", "review", "Sell a premium backlit edition of the remote at a higher retail price",
         {"type": "upsell", "owner": "Priya", "next_step": "Price the backlit model"}, 10, 11, ("Priya",)),
    Item("task", "review", "Ask the supplier for a written delivery date",
         {"assignee": "Jonas", "due_date": date(2026, 11, 6), "status": "open"}, 12, 12, ("Maya", "Jonas")),
    Item("task", "standup", "Schedule a new drop test for the enclosure",
         {"assignee": "Ravi", "due_date": date(2026, 11, 20), "status": "open"}, 3, 4, ("Ravi",)),
    Item("task", "review", "Update the specification with the USB-C charging port",
         {"assignee": "Maya", "status": "done"}, 13, 13, ("Maya",)),
    Item("decision", "dock", "Use recycled plastic for the charging dock casing", {"owner": "Lena", "status": "proposed"}, 0, 1, ("Lena",)),
    Item("opportunity", "dock", "Offer the charging dock as a separate accessory",
         {"type": "accessory", "owner": "Lena", "next_step": "Ask retail partners about a price for the dock"}, 2, 3, ("Lena",)),
    Item("task", "dock", "Order recycled plastic samples for the dock", {"assignee": "Lena", "status": "blocked"}, 1, 2, ("Lena",)),
]  # fmt: skip

GLOBEX_ITEMS = [
    Item("segment", "secret", "Zanzibar budget review: the budget stays internal.", {"title": "Zanzibar budget"}, 0, 1, ("Zed",)),
    Item("decision", "secret", "The zanzibar budget for the battery stays internal", {"owner": "Zed", "status": "agreed"}, 0, 1, ("Zed", "Yves")),
    Item("risk", "secret", "The zanzibar budget of the battery supplier could leak", {"category": "security"}, 0, 1, ("Yves",)),
    Item("opportunity", "secret", "Zanzibar battery pricing could be resold", {"type": "resale"}, 0, 1, ("Zed",)),
    Item("task", "secret", "Hide the zanzibar budget for the battery supplier", {"assignee": "Yves", "status": "open"}, 0, 1, ("Yves",)),
]  # fmt: skip
