"""Planning a re-embedding run: the manifests (id ranges of every embedded table), one run at a time.

A run starts when a target model is configured and the database is not in it. Its manifests hold at most
``manifest_records`` rows each, and the target's partial HNSW index is created empty over ``embedding_alt`` first,
so every import maintains it and no step builds it whole. A run nothing drives any more is resumed.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import psycopg

from rag.reembed import rows
from rag.reembed.runs import Target, fail, target_of
from rag.store.embedding_space import record_model
from rag.store.schema import EMBEDDED_TABLES, embedding_index_sql

if TYPE_CHECKING:
    from rag.config import Settings

logger = logging.getLogger(__name__)

# Bedrock refuses a batch job of fewer records: a smaller range is embedded online by finish.
MIN_JOB_RECORDS = 100
# One planner at a time (its index builds would deadlock with another's): a session lock, as they run outside
# a transaction.
_PLAN_LOCK = 7_320_114_003
# A running run none of whose rows moved for this long has no execution driving it: the next plan resumes it.
# (A live execution checks its jobs every few minutes, and every check touches its manifest.)
STALE_SECONDS = 3600


def plan(conn: psycopg.Connection, settings: Settings) -> dict[str, Any]:
    """A new run and its manifests; a stale run's unfinished manifests; or ``run_id`` None (nothing to do, or a run
    under way that shows signs of life)."""
    nothing: dict[str, Any] = {"run_id": None, "manifests": [], "records": 0}
    target = target_of(settings)
    if target is None:
        return nothing
    source = record_model(conn, settings.embedding.model_id, settings.embedding.resolved_dimension)
    if source[0] == target.model_id:
        return nothing
    if not conn.execute("SELECT pg_try_advisory_lock(%s)", (_PLAN_LOCK,)).fetchone()[0]:  # type: ignore[index]
        logger.info("another planner is planning: nothing planned")
        return nothing
    try:
        return _plan(conn, settings, source[0], target) or nothing
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (_PLAN_LOCK,))


def _plan(conn: psycopg.Connection, settings: Settings, source: str, target: Target) -> dict[str, Any] | None:
    running = _running_run(conn)
    if running is not None and running[1] != target.model_id:  # the configured target changed: start over towards it
        fail(conn, running[0], f"the configured target changed to {target.model_id}")
    elif running is not None:
        return _resume(conn, running, target)
    _create_target_indexes(conn, target)  # concurrently, so outside the transaction; idempotent
    run_id = "r" + datetime.now(UTC).strftime("%Y%m%dt%H%M%S%f")
    manifests: list[dict[str, Any]] = []
    try:
        _insert_run(conn, run_id, source, target, settings.reembed.manifest_records, manifests)
    except psycopg.errors.UniqueViolation:  # another planner (on another schema version?) started a run first
        logger.info("another planner started a run first: nothing planned")
        return None
    records = sum(m.pop("records") for m in manifests)
    logger.info("re-embedding planned", extra={"run_id": run_id, "manifests": len(manifests), "rows": records})
    return {"run_id": run_id, "manifests": manifests, "records": records}


def _insert_run(
    conn: psycopg.Connection, run_id: str, source: str, target: Target, limit: int, manifests: list[dict[str, Any]]
) -> None:
    """The run and its manifests in one transaction: a plan killed halfway leaves no run behind."""
    with conn.transaction():
        conn.execute(
            "INSERT INTO reembed_runs (id, source_model_id, target_model_id, target_dimension, state)"
            " VALUES (%s, %s, %s, %s, 'running')",
            (run_id, source, target.model_id, target.dimension),
        )  # a second planner racing this one fails here on the one-running index
        for table in EMBEDDED_TABLES:
            # Segments have a record per piece (a few each): fewer rows a manifest keep it under Bedrock's per-file cap.
            rows_each = max(MIN_JOB_RECORDS, limit // 4) if table == "segments" else limit
            for first, last, count in _ranges(conn, table, rows_each):
                if count < MIN_JOB_RECORDS:
                    continue  # too few for a batch job: finish embeds them online
                number = len(manifests)
                conn.execute(
                    "INSERT INTO reembed_manifests (run_id, manifest, table_name, first_id, last_id, records)"
                    " VALUES (%s, %s, %s, %s, %s, %s)",
                    (run_id, number, table, first, last, count),
                )
                manifests.append({"run_id": run_id, "manifest": number, "records": count})
        conn.execute("UPDATE reembed_runs SET manifests = %s, updated_at = now() WHERE id = %s", (len(manifests), run_id))


def _running_run(conn: psycopg.Connection) -> tuple[str, str, float] | None:
    """(id, target model, seconds since the run or any of its manifests last moved) of the running run."""
    row = conn.execute(
        """SELECT r.id, r.target_model_id,
                  extract(epoch FROM now() - greatest(r.updated_at, coalesce(max(m.updated_at), r.updated_at)))
           FROM reembed_runs r LEFT JOIN reembed_manifests m ON m.run_id = r.id
           WHERE r.state = 'running' GROUP BY r.id"""
    ).fetchone()
    return None if row is None else (str(row[0]), str(row[1]), float(row[2]))


def _resume(conn: psycopg.Connection, running: tuple[str, str, float], target: Target) -> dict[str, Any] | None:
    """A run whose steps stopped (its execution died) goes on where it was; a live one is left to its execution.

    Every step of a live run touches its rows (a check at least every poll), so silence longer than
    ``STALE_SECONDS`` means nothing drives it.
    """
    run_id, _, idle_seconds = running
    if idle_seconds < STALE_SECONDS:
        logger.info("a re-embedding run is under way: nothing planned", extra={"run_id": run_id})
        return None
    left = conn.execute(
        "SELECT manifest, records FROM reembed_manifests WHERE run_id = %s AND state <> 'imported' ORDER BY manifest",
        (run_id,),
    ).fetchall()
    conn.execute("UPDATE reembed_runs SET updated_at = now() WHERE id = %s", (run_id,))
    logger.info("resuming a stalled re-embedding run", extra={"run_id": run_id, "manifests": len(left)})
    return {
        "run_id": run_id,
        "manifests": [{"run_id": run_id, "manifest": int(number)} for number, _ in left],
        "records": sum(int(count) for _, count in left),
    }


def _ranges(conn: psycopg.Connection, table: str, rows_each: int) -> list[tuple[int, int, int]]:
    """(first id, last id, rows) of consecutive ranges of ``table``'s embedded rows, ``rows_each`` rows a range."""
    found = conn.execute(
        f"""SELECT min(id), max(id), count(*) FROM (
                SELECT id, (row_number() OVER (ORDER BY id) - 1) / %s AS part FROM {rows.check_table(table)}
                WHERE embedding IS NOT NULL) AS numbered
            GROUP BY part ORDER BY part""",  # noqa: S608 - checked table
        (rows_each,),
    ).fetchall()
    return [(int(first), int(last), int(count)) for first, last, count in found]


def _create_target_indexes(conn: psycopg.Connection, target: Target) -> None:
    """The target's index over ``embedding_alt`` of every table, empty now: each import adds its rows to it."""
    conn.execute("SET statement_timeout = 0")  # CONCURRENTLY waits for running transactions; nothing to build yet
    try:
        for table in EMBEDDED_TABLES:
            conn.execute(embedding_index_sql(table, target.model_id, target.dimension, concurrently=True, alternate=True))
    finally:
        conn.execute("RESET statement_timeout")
