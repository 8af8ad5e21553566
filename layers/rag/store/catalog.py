"""Read models for the API: projects, meetings and documents of one tenant."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg

PROJECT_COLUMNS = """project_id AS id, count(*) AS document_count, coalesce(sum(chunk_count), 0) AS chunk_count,
                     count(*) FILTER (WHERE kind = 'transcript') AS meeting_count, max(updated_at) AS last_activity"""


def _rows(conn: psycopg.Connection, statement: str, params: Any) -> list[dict[str, Any]]:
    from psycopg.rows import dict_row

    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(statement, params).fetchall()


def list_projects(conn: psycopg.Connection, tenant_id: str) -> list[dict[str, Any]]:
    return _rows(
        conn,
        f"SELECT {PROJECT_COLUMNS} FROM documents WHERE tenant_id = %s GROUP BY project_id ORDER BY project_id",
        (tenant_id,),
    )


def get_project(conn: psycopg.Connection, tenant_id: str, project_id: str) -> dict[str, Any] | None:
    rows = _rows(
        conn,
        f"SELECT {PROJECT_COLUMNS} FROM documents WHERE tenant_id = %s AND project_id = %s GROUP BY project_id",
        (tenant_id, project_id),
    )
    return rows[0] if rows else None


def list_meetings(conn: psycopg.Connection, tenant_id: str, project_id: str | None, limit: int) -> list[dict[str, Any]]:
    """Transcripts, most recent meeting first (undated ones last, newest upload first)."""
    return _rows(
        conn,
        """SELECT id::text AS document_id, project_id, title, meeting_date, participants, status, chunk_count,
                  source_uri, title AS source_title
           FROM documents
           WHERE tenant_id = %(tenant)s AND kind = 'transcript' AND (%(project)s::text IS NULL OR project_id = %(project)s)
           ORDER BY meeting_date DESC NULLS LAST, created_at DESC
           LIMIT %(limit)s""",
        {"tenant": tenant_id, "project": project_id, "limit": limit},
    )


def get_document(conn: psycopg.Connection, tenant_id: str, document_id: str) -> dict[str, Any] | None:
    rows = _rows(
        conn,
        """SELECT id::text AS id, project_id, kind, format, status, error, chunk_count, title, meeting_date,
                  participants, source_uri, embedding_model, created_at, updated_at
           FROM documents WHERE tenant_id = %s AND id = %s""",
        (tenant_id, document_id),
    )
    return rows[0] if rows else None
