"""``GET /v1/tasks``: the extracted tasks of one tenant, soonest due first.

Tasks without a due date come after dated ones, the most recent meeting first; one
statement, served by ``tasks_tenant_project_status_idx``. Status, owner and due date are the
task's after every meeting (``rag.store.timeline``); ``changes`` cites where a later meeting
reported it done or cancelled, handed it over or moved its date, oldest first.
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg


MAX_CHANGES = 20  # per task: the statements cited with it


def list_tasks(
    conn: psycopg.Connection,
    tenant_id: str,
    *,
    project_id: str | None,
    status: str | None,
    limit: int,
    assignee: str | None = None,
    due_after: date | None = None,
    due_before: date | None = None,
) -> list[dict[str, Any]]:
    """``due_after`` / ``due_before``: due on or after / on or before that day (a task without a due date is left out)."""
    from psycopg.rows import dict_row

    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            """SELECT t.id::text AS id, t.description, t.assignee, t.due_date, t.status, t.project_id,
                      t.document_id::text AS document_id, d.source_uri, d.title AS source_title, d.meeting_date,
                      t.start_char, t.end_char, t.start_turn, t.end_turn, t.speakers, t.evidence, t.created_at,
                      coalesce((
                          SELECT jsonb_agg(jsonb_build_object(
                                     'change', c.change, 'new_value', c.new_value, 'evidence', c.evidence,
                                     'document_id', c.document_id::text, 'meeting_date', cd.meeting_date,
                                     'start_char', c.start_char, 'end_char', c.end_char,
                                     'start_turn', c.start_turn, 'end_turn', c.end_turn, 'speakers', c.speakers)
                                 ORDER BY cd.meeting_date NULLS LAST, c.id)
                          FROM (SELECT * FROM knowledge_changes
                                 WHERE tenant_id = t.tenant_id AND target_kind = 'task' AND target_id = t.id
                                 ORDER BY id LIMIT %(changes)s) c
                          JOIN documents cd ON cd.id = c.document_id AND cd.tenant_id = c.tenant_id
                      ), '[]'::jsonb) AS changes
               FROM tasks t JOIN documents d ON d.id = t.document_id AND d.tenant_id = t.tenant_id
               WHERE t.tenant_id = %(tenant)s
                 AND (%(project)s::text IS NULL OR t.project_id = %(project)s)
                 AND (%(status)s::text IS NULL OR t.status = %(status)s)
                 AND (%(assignee)s::text IS NULL OR lower(t.assignee) = lower(%(assignee)s))
                 AND (%(due_after)s::date IS NULL OR t.due_date >= %(due_after)s::date)
                 AND (%(due_before)s::date IS NULL OR t.due_date <= %(due_before)s::date)
               ORDER BY t.due_date NULLS LAST, d.meeting_date DESC NULLS LAST, t.id
               LIMIT %(limit)s""",
            {
                "tenant": tenant_id,
                "project": project_id,
                "status": status,
                "assignee": assignee,
                "due_after": due_after,
                "due_before": due_before,
                "limit": limit,
                "changes": MAX_CHANGES,
            },
            prepare=False,
        ).fetchall()
