"""A project's links over time, recomputed from its stored items (``rag.timeline`` decides them).

``relink`` runs in the caller's transaction whenever a meeting's items change: the extract stage
after writing a document's items, the segment stage after dropping them, a document's deletion
or re-ingest. It reads the items' stated values and words, decides every link again and writes
only the rows whose effective values differ. An advisory lock per project (``lock_project``, taken
before the caller touches the project's items) serialises two writers of one project's items (two
documents extracted at once, an extraction and a deletion); different projects do not wait.
The work is bounded: the project's most recent ``MAX_ITEMS`` items of each kind and changes.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from rag.timeline import Moment, TimedChange, TimedItem, Timeline, link

if TYPE_CHECKING:
    import psycopg

MAX_ITEMS = 5_000  # per kind and project: the links of older items stay as they are
LINKED_TABLES = {"decision": "decisions", "risk": "risks", "task": "tasks"}
# "cut over" is the "cutover", "roll out" the "rollout": a phrasal verb's words joined, stemmed beside the rest; not a
# pronoun's ("pick it up") nor "in" starting a phrase of time or place ("draft that in two weeks", "in the archive").
_COMPOUNDS_SQL = (
    "tsvector_to_array(to_tsvector('english', regexp_replace({text}, "
    "'\\m(?!(?:it|that|this|them|those|these|me|you|him|her|us|everything|something|all)\\M)(\\w+)\\s+"
    "(over|up|off|out|down|back|in(?!\\s+(?:the|a|an|two|three|four|five|six|time|\\d)))\\M', '\\1\\2', 'gi')))"
)
_MOMENT_SQL = "coalesce(d.meeting_date, d.created_at::date), extract(epoch FROM d.created_at)::float8, d.id::text, k.start_char"


def lock_project(conn: psycopg.Connection, tenant_id: str, project_id: str) -> None:
    """Hold the project's timeline until the transaction ends.

    Taken before a transaction deletes or writes a project's items, not only by ``relink``: deleting an
    item sets ``superseded_by`` of the decisions it replaced (row locks), and a relink of another
    transaction waiting for those rows while holding this lock would deadlock.
    """
    conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 7320114))", (f"{tenant_id}/{project_id}",))


def relink(conn: psycopg.Connection, tenant_id: str, project_id: str) -> Timeline:
    """Recompute and store the project's supersessions, task states and risk closures; returns them."""
    scope = {"tenant": tenant_id, "project": project_id, "limit": MAX_ITEMS}
    lock_project(conn, tenant_id, project_id)
    items = [item for kind in LINKED_TABLES for item in _items(conn, kind, scope)]
    changes = _changes(conn, scope)
    timeline = link(items, changes, _name_words(conn, scope))
    _store(conn, scope, timeline)
    return timeline


def _items(conn: psycopg.Connection, kind: str, scope: dict[str, Any]) -> list[TimedItem]:
    table = LINKED_TABLES[kind]
    context = "tsvector_to_array(to_tsvector('english', coalesce(k.context, '')))" if kind != "risk" else "NULL"
    rows = conn.execute(
        f"""SELECT k.id, {_MOMENT_SQL}, tsvector_to_array(k.search_tsv) || {_COMPOUNDS_SQL.format(text="k.description")},
                   k.description, k.stated, k.end_char, k.method = 'sections', {context}, k.method = 'llm'
            FROM {table} k JOIN documents d ON d.id = k.document_id AND d.tenant_id = k.tenant_id
            WHERE k.tenant_id = %(tenant)s AND k.project_id = %(project)s
            ORDER BY 2 DESC, 3 DESC, k.id DESC LIMIT %(limit)s""",  # noqa: S608 - table names are constants
        scope,
    ).fetchall()
    return [
        TimedItem(
            kind,
            id_,
            Moment(day, uploaded, document, position),
            frozenset(words),
            description,
            stated or {},
            end,
            listed,
            frozenset(context or ()),
            by_model=by_model,
        )
        for id_, day, uploaded, document, position, words, description, stated, end, listed, context, by_model in rows
    ]


def _name_words(conn: psycopg.Connection, scope: dict[str, Any]) -> list[str]:
    """The stems of the project's people's names (its meetings' participants without their "(roles)", its tasks' owners)."""
    row = conn.execute(
        r"""SELECT array_agg(DISTINCT word) FROM (
               SELECT unnest(tsvector_to_array(to_tsvector('english', regexp_replace(
                          array_to_string(participants, ' '), '\([^)]*\)', ' ', 'g')))) AS word
                 FROM documents WHERE tenant_id = %(tenant)s AND project_id = %(project)s
               UNION ALL
               SELECT unnest(tsvector_to_array(to_tsvector('english', assignee)))
                 FROM tasks WHERE tenant_id = %(tenant)s AND project_id = %(project)s AND assignee IS NOT NULL
           ) AS names""",
        scope,
    ).fetchone()
    return list(row[0] or []) if row else []


def _changes(conn: psycopg.Connection, scope: dict[str, Any]) -> list[TimedChange]:
    rows = conn.execute(
        f"""SELECT k.id, {_MOMENT_SQL}, k.change,
                   tsvector_to_array(k.search_tsv) || {_COMPOUNDS_SQL.format(text="k.evidence")},
                   tsvector_to_array(to_tsvector('english', coalesce(k.context, ''))), k.speakers, k.new_value,
                   k.proposed_target, k.promised
            FROM knowledge_changes k JOIN documents d ON d.id = k.document_id AND d.tenant_id = k.tenant_id
            WHERE k.tenant_id = %(tenant)s AND k.project_id = %(project)s
            ORDER BY 2 DESC, 3 DESC, k.id DESC LIMIT %(limit)s""",  # noqa: S608 - constant SQL
        scope,
    ).fetchall()
    return [
        TimedChange(
            id_,
            Moment(day, uploaded, document, position),
            change,
            frozenset(words),
            frozenset(context),
            tuple(speakers),
            new_value,
            proposed,
            promised=promised,
        )  # fmt: skip
        for id_, day, uploaded, document, position, change, words, context, speakers, new_value, proposed, promised in rows
    ]


def _store(conn: psycopg.Connection, scope: dict[str, Any], timeline: Timeline) -> None:
    """Each row's effective values, written only where they differ from what is stored."""
    decisions = [(id_, "superseded" if by is not None else "current", by) for id_, by in timeline.superseded_by.items()]
    _update(conn, "decisions", ("status", "superseded_by"), ("text", "bigint"), decisions, scope)
    _update(conn, "risks", ("status",), ("text",), list(timeline.risk_status.items()), scope)
    tasks = [(id_, t.status, t.assignee, t.due_date) for id_, t in timeline.tasks.items()]
    _update(conn, "tasks", ("status", "assignee", "due_date"), ("text", "text", "date"), tasks, scope)
    targets = [(id_, *(target or (None, None))) for id_, target in timeline.change_targets.items()]
    _update(conn, "knowledge_changes", ("target_kind", "target_id"), ("text", "bigint"), targets, scope)


def _update(
    conn: psycopg.Connection,
    table: str,
    columns: tuple[str, ...],
    types: tuple[str, ...],
    rows: list[tuple[Any, ...]],
    scope: dict[str, Any],
) -> None:
    """One UPDATE ... FROM a jsonb array of the rows (a round trip per table, whatever the count)."""
    if not rows:
        return
    records = json.dumps([{"id": row[0], **dict(zip(columns, map(_json, row[1:])))} for row in rows])
    typed = ", ".join(f"{column} {kind}" for column, kind in zip(("id", *columns), ("bigint", *types)))
    assignments = ", ".join(f"{column} = v.{column}" for column in columns)
    changed = " OR ".join(f"t.{column} IS DISTINCT FROM v.{column}" for column in columns)
    conn.execute(
        f"""UPDATE {table} t SET {assignments}
            FROM jsonb_to_recordset(%(rows)s::jsonb) AS v({typed})
            WHERE t.id = v.id AND t.tenant_id = %(tenant)s AND t.project_id = %(project)s AND ({changed})""",  # noqa: S608
        {**scope, "rows": records},
    )


def _json(value: Any) -> Any:
    return value.isoformat() if hasattr(value, "isoformat") else value
