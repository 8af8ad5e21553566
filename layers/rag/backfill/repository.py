"""Rows of the backfill: segments and knowledge items, replaced per document (idempotent)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rag.backfill.models import ITEM_TABLES, KnowledgeItem, Segment, StoredSegment

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


def delete_items(conn: psycopg.Connection, document: ClaimedDocument) -> None:
    for table, _ in ITEM_TABLES.values():
        conn.execute(
            f"DELETE FROM {table} WHERE document_id = %s AND tenant_id = %s",  # noqa: S608 - table names are constants
            (document.id, document.tenant_id),
        )


def replace_segments(conn: psycopg.Connection, document: ClaimedDocument, segments: Sequence[Segment]) -> list[int]:
    """The document's segments (without vectors: the embed stage adds them); old segments and items go."""
    delete_items(conn, document)
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
    """The document's knowledge items, one INSERT per kind; returns how many of each were written."""
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
                *(item.fields.get(column) for column in own_columns),
            )  # fmt: skip
            for item, vector in zip(items, vectors)
            if item.kind == kind
        ]
        if kind == "task":  # status is NOT NULL with a default: rules and LLM may leave it out
            rows = [(*row[:-1], row[-1] or "open") for row in rows]
        insert_rows(conn, table, (*SHARED_ITEM_COLUMNS, *own_columns), rows)
        written[kind] = len(rows)
    return written


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
