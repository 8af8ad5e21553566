"""What changed in a project between two meeting dates, each item cited to where it was said.

``changes_between`` answers "what was decided, changed, closed, assigned or completed since
D": the decisions made (with the earlier decisions each replaced), the decisions superseded,
the risks raised and closed, the tasks assigned, and the tasks a later meeting reported done,
cancelled, handed over or rescheduled (``knowledge_changes`` rows linked to their task by
``rag.store.timeline``). The range is on meeting dates, both ends inclusive; meetings without
a date are left out. One statement; every category is capped at ``limit`` rows.

Every item carries its document, source, meeting date, turns, speakers and evidence: what an
answer cites. An item that points at another one (a decision and the one it replaced, a
"done" and its task) carries that one as a reference with its own citation fields.
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg

MAX_LIMIT = 200
# The keys of ``changes_between``'s answer, in the order a reader wants them.
CATEGORIES = (
    "decisions_made", "decisions_superseded", "risks_raised", "risks_closed", "tasks_assigned",
    "tasks_done", "tasks_cancelled", "tasks_handed_over", "tasks_rescheduled",
)  # fmt: skip
# knowledge_changes.change of a task -> its category
TASK_CHANGE_CATEGORIES = {
    "done": "tasks_done", "cancelled": "tasks_cancelled", "reassigned": "tasks_handed_over",
    "rescheduled": "tasks_rescheduled",
}  # fmt: skip

# The citation fields of an item of table alias ``k`` in document alias ``d``, as a JSON reference.
_REF = """jsonb_build_object(
    'id', {k}.id::text, 'description', {k}.description, 'status', {k}.status,
    'document_id', {d}.id::text, 'source_uri', {d}.source_uri, 'source_title', {d}.title,
    'meeting_date', {d}.meeting_date, 'start_char', {k}.start_char, 'end_char', {k}.end_char,
    'start_turn', {k}.start_turn, 'end_turn', {k}.end_turn, 'speakers', {k}.speakers, 'evidence', {k}.evidence)"""

_COLUMNS = """{d}.id::text AS document_id, {d}.source_uri, {d}.title AS source_title, {d}.meeting_date,
    {k}.start_char, {k}.end_char, {k}.start_turn, {k}.end_turn, {k}.speakers, {k}.evidence"""

_SQL = f"""
WITH docs AS (
    SELECT id, source_uri, title, meeting_date FROM documents
     WHERE tenant_id = %(tenant)s AND project_id = %(project)s AND meeting_date IS NOT NULL
       AND meeting_date >= %(since)s AND (%(until)s::date IS NULL OR meeting_date <= %(until)s::date)
)
(SELECT 'decisions_made' AS category, k.id::text AS id, k.description, k.status, k.owner AS person,
        NULL::date AS due_date, NULL::text AS change, NULL::text AS new_value, {_COLUMNS.format(k="k", d="d")},
        coalesce((SELECT jsonb_agg({_REF.format(k="e", d="ed")} ORDER BY ed.meeting_date, e.id)
                    FROM decisions e JOIN documents ed ON ed.id = e.document_id AND ed.tenant_id = e.tenant_id
                   WHERE e.tenant_id = k.tenant_id AND e.project_id = k.project_id AND e.superseded_by = k.id),
                 '[]'::jsonb) AS related
   FROM decisions k JOIN docs d ON d.id = k.document_id
  WHERE k.tenant_id = %(tenant)s AND k.project_id = %(project)s
  ORDER BY d.meeting_date, k.start_char, k.id LIMIT %(limit)s)
UNION ALL
(SELECT 'decisions_superseded', k.id::text, k.description, k.status, k.owner, NULL, NULL, NULL,
        {_COLUMNS.format(k="k", d="kd")}, jsonb_build_array({_REF.format(k="n", d="d")})
   FROM decisions n JOIN docs d ON d.id = n.document_id
   JOIN decisions k ON k.superseded_by = n.id AND k.tenant_id = n.tenant_id AND k.project_id = n.project_id
   JOIN documents kd ON kd.id = k.document_id AND kd.tenant_id = k.tenant_id
  WHERE n.tenant_id = %(tenant)s AND n.project_id = %(project)s
  ORDER BY d.meeting_date, n.start_char, k.id LIMIT %(limit)s)
UNION ALL
(SELECT 'risks_raised', k.id::text, k.description, k.status, NULL, NULL, NULL, NULL, {_COLUMNS.format(k="k", d="d")},
        '[]'::jsonb
   FROM risks k JOIN docs d ON d.id = k.document_id
  WHERE k.tenant_id = %(tenant)s AND k.project_id = %(project)s
  ORDER BY d.meeting_date, k.start_char, k.id LIMIT %(limit)s)
UNION ALL
(SELECT 'tasks_assigned', k.id::text, k.description, k.status, k.stated ->> 'assignee',
        (k.stated ->> 'due_date')::date, NULL, NULL, {_COLUMNS.format(k="k", d="d")}, '[]'::jsonb
   FROM tasks k JOIN docs d ON d.id = k.document_id
  WHERE k.tenant_id = %(tenant)s AND k.project_id = %(project)s
  ORDER BY d.meeting_date, k.start_char, k.id LIMIT %(limit)s)
UNION ALL
(SELECT CASE WHEN c.target_kind = 'risk' THEN 'risks_closed' ELSE c.change END, c.id::text, NULL, NULL, NULL,
        NULL, c.change, c.new_value, {_COLUMNS.format(k="c", d="d")},
        jsonb_build_array(coalesce(
            (SELECT {_REF.format(k="t", d="td")} || jsonb_build_object('assignee', t.assignee, 'due_date', t.due_date)
               FROM tasks t JOIN documents td ON td.id = t.document_id AND td.tenant_id = t.tenant_id
              WHERE c.target_kind = 'task' AND t.id = c.target_id AND t.tenant_id = c.tenant_id),
            (SELECT {_REF.format(k="r", d="rd")}
               FROM risks r JOIN documents rd ON rd.id = r.document_id AND rd.tenant_id = r.tenant_id
              WHERE c.target_kind = 'risk' AND r.id = c.target_id AND r.tenant_id = c.tenant_id)))
   FROM knowledge_changes c JOIN docs d ON d.id = c.document_id
  WHERE c.tenant_id = %(tenant)s AND c.project_id = %(project)s AND c.target_kind IS NOT NULL
  ORDER BY d.meeting_date, c.start_char, c.id LIMIT %(changes_limit)s)
"""


def changes_between(
    conn: psycopg.Connection,
    tenant_id: str,
    project_id: str,
    *,
    since: date,
    until: date | None = None,
    limit: int = 50,
) -> dict[str, list[dict[str, Any]]]:
    """Each of ``CATEGORIES`` -> its items in meeting order (at most ``limit`` each) for meetings ``since``..``until``."""
    from psycopg.rows import dict_row

    limit = max(1, min(limit, MAX_LIMIT))
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(
            _SQL,
            {
                "tenant": tenant_id,
                "project": project_id,
                "since": since,
                "until": until,
                "limit": limit,
                "changes_limit": limit * (len(TASK_CHANGE_CATEGORIES) + 1),
            },  # fmt: skip
            prepare=False,
        ).fetchall()
    found: dict[str, list[dict[str, Any]]] = {name: [] for name in CATEGORIES}
    for row in rows:
        category: str = row["category"]
        category = TASK_CHANGE_CATEGORIES.get(category, category)
        if len(found[category]) < limit:
            found[category].append(_item(row))
    return found


def _item(row: dict[str, Any]) -> dict[str, Any]:
    item = {k: v for k, v in row.items() if k not in ("category", "related", "person", "change", "new_value")}
    related = [ref for ref in row["related"] or () if ref]
    category = row["category"]
    if category == "decisions_made":
        item["owner"] = row["person"]
        item["supersedes"] = related
    elif category == "decisions_superseded":
        item["owner"] = row["person"]
        item["superseded_by"] = related[0]
    elif category == "tasks_assigned":
        item["assignee"] = row["person"]  # as stated in that meeting; ``status`` is the task's now
    elif row["change"] is not None:  # a later meeting's statement: what it changed is the target
        item.pop("status")
        item["change"], item["new_value"] = row["change"], row["new_value"]
        item["target"] = related[0] if related else None
        item["description"] = item["target"]["description"] if item["target"] else row["evidence"]
    if category != "tasks_assigned":
        item.pop("due_date")
    return item


def is_empty(changes: dict[str, list[dict[str, Any]]]) -> bool:
    return not any(changes.values())
