"""What the page reads of a tenant's documents: the list with counts by status, and one document's text window with
its turns, segments and extracted items. Every statement filters on the tenant; the text and turns are cut to the
window in SQL, so a long transcript never travels whole."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg

STATUSES = ("raw_ingested", "segmented", "embedded", "extracted", "failed")
MAX_PARTS = 2000  # segments, and items, of one document: far above what a meeting yields, a bound all the same


def _rows(conn: psycopg.Connection, statement: str, params: Any) -> list[dict[str, Any]]:
    from psycopg.rows import dict_row

    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(statement, params).fetchall()


def list_documents(
    conn: psycopg.Connection, tenant_id: str, project_id: str | None, status: str | None, limit: int
) -> list[dict[str, Any]]:
    """The tenant's documents (of one project, of one status), newest first."""
    return _rows(
        conn,
        """SELECT id::text AS document_id, project_id, kind, format, title, meeting_date, status, error,
                  backfill_error, chunk_count, created_at, updated_at, source_uri, title AS source_title
           FROM documents
           WHERE tenant_id = %(tenant)s AND (%(project)s::text IS NULL OR project_id = %(project)s)
             AND (%(status)s::text IS NULL OR status = %(status)s)
           ORDER BY created_at DESC, id
           LIMIT %(limit)s""",
        {"tenant": tenant_id, "project": project_id, "status": status, "limit": limit},
    )


def status_counts(conn: psycopg.Connection, tenant_id: str, project_id: str | None) -> dict[str, int]:
    """How many of the tenant's documents (of one project) are in each status, every status named."""
    rows = conn.execute(
        """SELECT status, count(*) FROM documents
           WHERE tenant_id = %s AND (%s::text IS NULL OR project_id = %s) GROUP BY status""",
        (tenant_id, project_id, project_id),
    ).fetchall()
    found = {str(status): int(count) for status, count in rows}
    return {status: found.get(status, 0) for status in STATUSES}


def document_window(conn: psycopg.Connection, tenant_id: str, document_id: str, offset: int, limit: int) -> dict[str, Any] | None:
    """The document's fields, ``length`` of its body, ``text`` (the body from ``offset``, at most ``limit`` chars) and
    the ``turns`` that overlap that window as ``[index, [speaker, start_char, end_char, start_s, end_s]]``; None
    when the tenant has no such document."""
    rows = _rows(
        conn,
        """SELECT d.id::text AS document_id, d.project_id, d.kind, d.format, d.title, d.meeting_date, d.participants,
                  d.status, d.source_uri, coalesce(char_length(d.body), 0) AS length,
                  coalesce(substr(d.body, %(offset)s::int + 1, %(limit)s::int), '') AS text,
                  (SELECT coalesce(jsonb_agg(jsonb_build_array(t.position - 1, t.turn) ORDER BY t.position), '[]')
                   FROM jsonb_array_elements(coalesce(d.turns, '[]')) WITH ORDINALITY AS t(turn, position)
                   WHERE (t.turn ->> 1)::int < %(offset)s::int + %(limit)s::int AND (t.turn ->> 2)::int > %(offset)s::int) AS turns
           FROM documents d WHERE d.tenant_id = %(tenant)s AND d.id = %(id)s""",
        {"tenant": tenant_id, "id": document_id, "offset": offset, "limit": limit},
    )
    return rows[0] if rows else None


def document_segments(conn: psycopg.Connection, tenant_id: str, document_id: str) -> list[dict[str, Any]]:
    """The document's segments in order (all of them: the page's table of contents)."""
    return _rows(
        conn,
        """SELECT segment_index AS index, title, summary, start_turn, end_turn, start_char, end_char
           FROM segments WHERE tenant_id = %s AND document_id = %s ORDER BY segment_index LIMIT %s""",
        (tenant_id, document_id, MAX_PARTS),
    )


ITEMS = """
SELECT 'decision' AS kind, id::text AS id, description, status, NULL AS assignee, NULL::date AS due_date,
       superseded_by::text AS superseded_by, start_turn, end_turn, start_char, end_char, speakers
FROM decisions WHERE tenant_id = %(tenant)s AND document_id = %(id)s
UNION ALL
SELECT 'risk', id::text, description, status, NULL, NULL, NULL, start_turn, end_turn, start_char, end_char, speakers
FROM risks WHERE tenant_id = %(tenant)s AND document_id = %(id)s
UNION ALL
SELECT 'opportunity', id::text, description, NULL, NULL, NULL, NULL, start_turn, end_turn, start_char, end_char, speakers
FROM opportunities WHERE tenant_id = %(tenant)s AND document_id = %(id)s
UNION ALL
SELECT 'task', id::text, description, status, assignee, due_date, NULL, start_turn, end_turn, start_char, end_char,
       speakers
FROM tasks WHERE tenant_id = %(tenant)s AND document_id = %(id)s
ORDER BY start_char, kind, id
LIMIT %(limit)s"""


def document_items(conn: psycopg.Connection, tenant_id: str, document_id: str) -> list[dict[str, Any]]:
    """The decisions, risks, opportunities and tasks extracted from the document, in the order they were said."""
    return _rows(conn, ITEMS, {"tenant": tenant_id, "id": document_id, "limit": MAX_PARTS})
