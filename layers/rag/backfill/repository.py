"""Rows of the backfill: segments and knowledge items, replaced per document (idempotent)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any

from rag.backfill.models import ITEM_TABLES, KnowledgeChange, KnowledgeItem, Segment, StoredSegment

if TYPE_CHECKING:
    import psycopg

    from rag.backfill.documents import ClaimedDocument

SHARED_ITEM_COLUMNS = (
    "document_id", "segment_id", "tenant_id", "project_id", "start_turn", "end_turn", "start_char", "end_char",
    "speakers", "description", "evidence", "method", "embedding", "embedding_model",
)  # fmt: skip


def insert_rows(
    conn: psycopg.Connection, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], *, returning: str | None = None
) -> list[Any]:
    """One multi-row INSERT (a round trip per table, not per row)."""
    if not rows:
        return []
    from psycopg import sql

    row_sql = sql.SQL("({})").format(sql.SQL(", ").join(sql.Placeholder() * len(columns)))
    statement = sql.SQL("INSERT INTO {table} ({columns}) VALUES {rows}").format(
        table=sql.Identifier(table),
        columns=sql.SQL(", ").join(map(sql.Identifier, columns)),
        rows=sql.SQL(", ").join([row_sql] * len(rows)),
    )
    if returning:
        statement = sql.SQL("{} RETURNING {}").format(statement, sql.Identifier(returning))
    cursor = conn.execute(statement, [value for row in rows for value in row])
    return [row[0] for row in cursor.fetchall()] if returning else []


# What the extractor stated of each kind, kept beside the effective values a later meeting may change
# (rag.store.timeline recomputes those from these).
STATED_FIELDS = {"decision": ("supersedes",), "risk": ("status",), "task": ("assignee", "due_date", "status")}
WITH_CONTEXT = ("task", "decision")  # kept with what was said just before them (sql/0015)
# The effective value of a linked column when the extractor states none.
INITIAL_STATUS = {"decision": "current", "risk": "open", "task": "open"}
CHANGE_COLUMNS = (
    "document_id", "segment_id", "tenant_id", "project_id", "start_turn", "end_turn", "start_char", "end_char",
    "speakers", "evidence", "context", "change", "new_value", "method", "proposed_target", "promised",
)  # fmt: skip


def delete_items(conn: psycopg.Connection, document: ClaimedDocument) -> int:
    """The document's items and change statements; returns how many rows went (the caller relinks its project)."""
    deleted = 0
    for table in ("knowledge_changes", *(table for table, _ in ITEM_TABLES.values())):
        deleted += conn.execute(
            f"DELETE FROM {table} WHERE document_id = %s AND tenant_id = %s",  # noqa: S608 - table names are constants
            (document.id, document.tenant_id),
        ).rowcount
    return deleted


def replace_segments(conn: psycopg.Connection, document: ClaimedDocument, segments: Sequence[Segment]) -> list[int]:
    """The document's segments (without vectors: the embed stage adds them); old segments and items go.

    When items went, what they had changed in the project's other meetings is recomputed.
    """
    from rag.store.timeline import lock_project, relink

    lock_project(conn, document.tenant_id, document.project_id)
    if delete_items(conn, document):
        relink(conn, document.tenant_id, document.project_id)
    conn.execute("DELETE FROM segments WHERE document_id = %s AND tenant_id = %s", (document.id, document.tenant_id))
    columns = (
        "document_id", "tenant_id", "project_id", "segment_index", "title", "summary", "start_turn", "end_turn",
        "start_char", "end_char", "speakers", "heading_path", "method",
    )  # fmt: skip
    rows = [
        (
            document.id,
            document.tenant_id,
            document.project_id,
            s.index,
            s.title,
            s.summary,
            s.start_turn,
            s.end_turn,
            s.start_char,
            s.end_char,
            list(s.speakers),
            list(s.heading_path),
            s.method,
        )  # fmt: skip
        for s in segments
    ]
    return insert_rows(conn, "segments", columns, rows, returning="id")


def load_segments(conn: psycopg.Connection, document: ClaimedDocument) -> list[StoredSegment]:
    rows = conn.execute(
        """SELECT id, segment_index, title, start_char, end_char, start_turn, end_turn
           FROM segments WHERE document_id = %s AND tenant_id = %s ORDER BY segment_index""",
        (document.id, document.tenant_id),
    ).fetchall()
    return [StoredSegment(*row) for row in rows]


def replace_items(
    conn: psycopg.Connection,
    document: ClaimedDocument,
    items: Sequence[KnowledgeItem],
    vectors: Sequence[Any],
    model_id: str,
) -> dict[str, int]:
    """The document's knowledge items, one INSERT per kind; returns how many of each were written.

    Each row starts at what its extractor stated (``stated``, and the linked columns' initial values);
    ``rag.store.timeline.relink`` then applies what later meetings changed.
    """
    from pgvector import Vector

    if len(items) != len(vectors):
        raise ValueError(f"expected one vector per item, got {len(vectors)} for {len(items)} items")
    delete_items(conn, document)
    written: dict[str, int] = {}
    for kind, (table, own_columns) in ITEM_TABLES.items():
        rows = [
            (
                document.id,
                item.segment_id,
                document.tenant_id,
                document.project_id,
                item.start_turn,
                item.end_turn,
                item.start_char,
                item.end_char,
                list(item.speakers),
                item.description,
                item.evidence,
                item.method,
                Vector(list(vector)),
                model_id,
                *(_own_value(item, column) for column in own_columns),
                *_linked_values(item),
            )  # fmt: skip
            for item, vector in zip(items, vectors)
            if item.kind == kind
        ]
        insert_rows(conn, table, (*SHARED_ITEM_COLUMNS, *own_columns, *_linked_columns(kind)), rows)
        written[kind] = len(rows)
    return written


def _own_value(item: KnowledgeItem, column: str) -> Any:
    value = item.fields.get(column)
    return INITIAL_STATUS[item.kind] if value is None and column == "status" else value


def _linked_columns(kind: str) -> tuple[str, ...]:
    return ("stated", "context") if kind in WITH_CONTEXT else ("stated",) if kind in STATED_FIELDS else ()


def _linked_values(item: KnowledgeItem) -> tuple[Any, ...]:
    """The item's ``stated`` values (JSON), and its status where the extractor left it out (NOT NULL); a task's or
    decision's context."""
    if item.kind not in STATED_FIELDS:
        return ()
    from psycopg.types.json import Jsonb

    stated = {name: _own_value(item, name) for name in STATED_FIELDS[item.kind]}
    # A model's "supersedes": null is an answer (it replaces nothing it was shown), kept apart from no answer.
    kept = {k: v for k, v in stated.items() if v is not None or (k == "supersedes" and k in item.fields)}
    jsonb = Jsonb({k: v.isoformat() if isinstance(v, date) else v for k, v in kept.items()})
    return (jsonb, item.context) if item.kind in WITH_CONTEXT else (jsonb,)


def replace_changes(conn: psycopg.Connection, document: ClaimedDocument, changes: Sequence[KnowledgeChange]) -> int:
    """The document's change statements (after ``replace_items``, which removed the old ones)."""
    rows = [
        (
            document.id,
            c.segment_id,
            document.tenant_id,
            document.project_id,
            c.start_turn,
            c.end_turn,
            c.start_char,
            c.end_char,
            list(c.speakers),
            c.evidence,
            c.context,
            c.change,
            c.new_value,
            c.method,
            c.proposed_target,
            c.promised,
        )  # fmt: skip
        for c in changes
    ]
    insert_rows(conn, "knowledge_changes", CHANGE_COLUMNS, rows)
    return len(rows)


@dataclass(frozen=True)
class EarlierItem:
    """An item of another meeting of the project, still current or open: what a chat model may link to."""

    kind: str  # decision | risk | task
    description: str
    meeting_date: date | None


MAX_EARLIER_ITEMS = 60  # the most recent ones: what a prompt can hold next to a segment


def earlier_open_items(conn: psycopg.Connection, document: ClaimedDocument) -> list[EarlierItem]:
    """The project's current decisions, open risks and open tasks of meetings held before this one, oldest first."""
    rows = conn.execute(
        """SELECT kind, description, meeting_date FROM (
               SELECT 'decision' AS kind, k.description, d.meeting_date, d.created_at, k.start_char
                 FROM decisions k JOIN documents d ON d.id = k.document_id
                WHERE k.tenant_id = %(tenant)s AND k.project_id = %(project)s AND k.status = 'current'
                  AND k.document_id <> %(document)s AND d.meeting_date <= %(day)s
               UNION ALL
               SELECT 'risk', k.description, d.meeting_date, d.created_at, k.start_char
                 FROM risks k JOIN documents d ON d.id = k.document_id
                WHERE k.tenant_id = %(tenant)s AND k.project_id = %(project)s AND k.status = 'open'
                  AND k.document_id <> %(document)s AND d.meeting_date <= %(day)s
               UNION ALL
               SELECT 'task', k.description, d.meeting_date, d.created_at, k.start_char
                 FROM tasks k JOIN documents d ON d.id = k.document_id
                WHERE k.tenant_id = %(tenant)s AND k.project_id = %(project)s AND k.status IN ('open', 'blocked')
                  AND k.document_id <> %(document)s AND d.meeting_date <= %(day)s
           ) AS earlier
           ORDER BY meeting_date DESC, created_at DESC, start_char DESC
           LIMIT %(limit)s""",
        {
            "tenant": document.tenant_id,
            "project": document.project_id,
            "document": document.id,
            "day": document.meeting_date or date.max,
            "limit": MAX_EARLIER_ITEMS,
        },
    ).fetchall()
    return [EarlierItem(kind, description, day) for kind, description, day in reversed(rows)]


def project_people(conn: psycopg.Connection, document: ClaimedDocument) -> list[str]:
    """The names the document's project already knows: its other meetings' speakers and its tasks' owners."""
    rows = conn.execute(
        """SELECT DISTINCT name FROM (
               SELECT unnest(speakers) AS name FROM segments
                WHERE tenant_id = %(tenant)s AND project_id = %(project)s AND document_id <> %(document)s
               UNION ALL
               SELECT assignee FROM tasks
                WHERE tenant_id = %(tenant)s AND project_id = %(project)s AND document_id <> %(document)s
           ) AS names
           WHERE name IS NOT NULL AND name <> ''
           ORDER BY name
           LIMIT 2000""",
        {"tenant": document.tenant_id, "project": document.project_id, "document": document.id},
    ).fetchall()
    return [name for (name,) in rows]
