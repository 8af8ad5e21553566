"""``GET /v1/tasks``: the extracted tasks of one tenant, soonest due first.

Tasks without a due date come after dated ones, the most recent meeting first; one
statement, served by ``tasks_tenant_project_status_idx``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg


def list_tasks(
    conn: psycopg.Connection, tenant_id: str, *, project_id: str | None, status: str | None, limit: int
) -> list[dict[str, Any]]:
    from psycopg.rows import dict_row

    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            """SELECT t.id::text AS id, t.description, t.assignee, t.due_date, t.status, t.project_id,
                      t.document_id::text AS document_id, d.source_uri, d.title AS source_title, d.meeting_date,
                      t.start_char, t.end_char, t.start_turn, t.end_turn, t.speakers, t.evidence, t.created_at
               FROM tasks t JOIN documents d ON d.id = t.document_id AND d.tenant_id = t.tenant_id
               WHERE t.tenant_id = %(tenant)s
                 AND (%(project)s::text IS NULL OR t.project_id = %(project)s)
                 AND (%(status)s::text IS NULL OR t.status = %(status)s)
               ORDER BY t.due_date NULLS LAST, d.meeting_date DESC NULLS LAST, t.id
               LIMIT %(limit)s""",
            {"tenant": tenant_id, "project": project_id, "status": status, "limit": limit},
            prepare=False,
        ).fetchall()
