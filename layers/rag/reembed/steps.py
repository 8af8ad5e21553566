"""The steps of a re-embedding run, as the state machine (infra/constructs/reembed.py) and ``rag reembed`` call them.

plan -> for each manifest: submit, check until done, import -> finish (again while it catches up) -> switched.

- plan: a run when a target model is configured and the database is not in it yet (one run at a time); its
  manifests are id ranges of the embedded tables, each at most ``manifest_records`` rows, and the target's partial
  HNSW index is created empty over ``embedding_alt``, so every import maintains it and no step builds it whole.
- submit: the range's texts to a JSONL manifest (and which row each record is of), then a batch job.
- import: the job's vectors into ``embedding_alt``; a record Bedrock failed leaves its row to finish. Idempotent.
- finish: rows still without a target vector (failed records, small tables, rows written since the plan) are
  embedded online, then one transaction swaps the columns and records the target as the database's model; the
  rows whose first vector came in between are embedded in it after, and the old model's index is dropped.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import psycopg

from rag.reembed import rows
from rag.reembed.errors import ReembedError
from rag.reembed.manifest import input_key, record_id
from rag.reembed.runs import Target, running_target, target_embedder, target_of
from rag.reembed.switch import finish
from rag.store.embedding_space import active_model, record_model
from rag.store.schema import EMBEDDED_TABLES, embedding_index_sql

if TYPE_CHECKING:
    from rag.config import Settings
    from rag.reembed.batch_jobs import BatchJobs
    from rag.reembed.storage import ManifestStore

logger = logging.getLogger(__name__)

# Bedrock refuses a batch job of fewer records: a smaller range is embedded online by finish.
MIN_JOB_RECORDS = 100
# One planner at a time (its index builds would deadlock with another's): a session lock, as they run outside
# a transaction.
_PLAN_LOCK = 7_320_114_003
# A running run none of whose rows moved for this long has no execution driving it: the next plan resumes it.
# (A live execution checks its jobs every few minutes, and every check touches its manifest.)
STALE_SECONDS = 3600


def run_step(
    conn: psycopg.Connection, settings: Settings, jobs: BatchJobs, store: ManifestStore, event: dict[str, Any]
) -> dict[str, Any]:
    """One step of a run, named by ``event["action"]`` (the contract of the state machine's tasks)."""
    action = event.get("action")
    if action == "plan":
        return plan(conn, settings)
    run_id = _text(event, "run_id")
    if action == "fail":
        return fail(conn, run_id, str(event.get("error") or "the run failed"))
    if action == "finish":
        return finish(conn, settings, run_id)
    manifest = _number(event, "manifest")
    if action == "submit":
        return submit(conn, settings, jobs, store, run_id, manifest)
    job_arn = _text(event, "job_arn")
    if action == "check":
        state = jobs.state(job_arn)
        if state.status == "failed":
            _set_manifest(conn, run_id, manifest, state="failed", error=state.message)
        else:  # a sign of life: the run is being driven (plan resumes only silent runs)
            _set_manifest(conn, run_id, manifest, state="completed" if state.status == "completed" else "submitted")
        return {"run_id": run_id, "manifest": manifest, "job_arn": job_arn, "status": state.status, "message": state.message}
    if action == "import":
        return import_results(conn, settings, jobs, store, run_id, manifest, job_arn)
    raise ReembedError(f"unknown action {action!r}: expected plan, submit, check, import, finish or fail")


def _text(event: dict[str, Any], key: str) -> str:
    value = event.get(key)
    if not isinstance(value, str) or not value:
        raise ReembedError(f"the step needs {key!r} (a non-empty string), got {value!r}")
    return value


def _number(event: dict[str, Any], key: str) -> int:
    value = event.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ReembedError(f"the step needs {key!r} (a number >= 0), got {value!r}")
    return value


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


def _manifest(conn: psycopg.Connection, run_id: str, manifest: int) -> tuple[str, int, int]:
    row = conn.execute(
        "SELECT table_name, first_id, last_id FROM reembed_manifests WHERE run_id = %s AND manifest = %s", (run_id, manifest)
    ).fetchone()
    if row is None:
        raise ReembedError(f"run {run_id} has no manifest {manifest}")
    return str(row[0]), int(row[1]), int(row[2])


def _set_manifest(conn: psycopg.Connection, run_id: str, manifest: int, **values: Any) -> None:
    columns = ", ".join(f"{name} = %({name})s" for name in values)
    conn.execute(
        f"UPDATE reembed_manifests SET {columns}, updated_at = now() WHERE run_id = %(run)s AND manifest = %(manifest)s",  # noqa: S608 - names are ours
        {**values, "run": run_id, "manifest": manifest},
    )


def rows_key(prefix: str, run_id: str, manifest: int) -> str:
    """The manifest's record -> row map, beside it (Bedrock reads only the .jsonl it is given)."""
    return f"{prefix}{run_id}/rows/{manifest:05d}.json"


def submit(
    conn: psycopg.Connection, settings: Settings, jobs: BatchJobs, store: ManifestStore, run_id: str, manifest: int
) -> dict[str, Any]:
    """Write the manifest of the range and start its batch job (a retried submit starts no second job)."""
    target = running_target(conn, settings, run_id)
    table, first, last = _manifest(conn, run_id, manifest)
    found = rows.pieces(conn, table, first, last, target_embedder(target))
    model_input: dict[str, Any] = {}
    if target.settings.embedding.provider == "bedrock":
        model_input = {"dimensions": target.dimension, "normalize": True}
    lines = (
        json.dumps({"recordId": record_id(n), "modelInput": {"inputText": piece.text, **model_input}})
        for n, piece in enumerate(found)
    )
    prefix = settings.reembed.prefix
    store.put_lines(input_key(prefix, run_id, manifest), lines)
    store.put_text(
        rows_key(prefix, run_id, manifest),
        json.dumps({"table": table, "rows": [[piece.row_id, piece.weight] for piece in found]}),
    )
    job_arn = jobs.submit(run_id, manifest, target.settings.embedding.resolved_model, target.dimension)
    _set_manifest(conn, run_id, manifest, state="submitted", job_arn=job_arn, records=len(found))
    logger.info("batch job submitted", extra={"run_id": run_id, "manifest": manifest, "job": job_arn, "records": len(found)})
    return {"run_id": run_id, "manifest": manifest, "job_arn": job_arn}


def import_results(
    conn: psycopg.Connection, settings: Settings, jobs: BatchJobs, store: ManifestStore, run_id: str, manifest: int,
    job_arn: str,
) -> dict[str, Any]:  # fmt: skip
    """The job's vectors into ``embedding_alt``; a row with a failed record is left to finish."""
    from rag.reembed.batch_jobs import parse_output_line

    target = running_target(conn, settings, run_id)
    mapping = json.loads(store.get_text(rows_key(settings.reembed.prefix, run_id, manifest)))
    table = rows.check_table(mapping["table"])
    records = [rows.Piece(int(row_id), "", int(weight)) for row_id, weight in mapping["rows"]]
    vectors: dict[int, list[float]] = {}
    failed: set[int] = set()
    errors: list[str] = []
    for line in jobs.output_lines(run_id, manifest, job_arn):
        if not line.strip():
            continue
        number, vector, error = parse_output_line(line)
        if not 0 <= number < len(records):
            raise ReembedError(f"manifest {manifest} of run {run_id} has no record {number}")
        if vector is None or len(vector) != target.dimension:
            failed.add(records[number].row_id)
            errors.append(error or f"record {number}: {len(vector or [])} dimensions, expected {target.dimension}")
            continue
        vectors[number] = vector
    pieces_per_row: dict[int, int] = {}
    for piece in records:
        pieces_per_row[piece.row_id] = pieces_per_row.get(piece.row_id, 0) + 1
    received: dict[int, int] = {}
    for number in vectors:
        received[records[number].row_id] = received.get(records[number].row_id, 0) + 1
    complete = {row for row, count in pieces_per_row.items() if received.get(row) == count and row not in failed}
    by_row = rows.row_vectors(table, [(records[n], v) for n, v in vectors.items() if records[n].row_id in complete])
    written = 0
    with conn.transaction():
        for batch in _batches(list(by_row.items()), 1_000):
            written += rows.write_alternate(conn, table, dict(batch), target.model_id)
        _set_manifest(
            conn, run_id, manifest, state="imported", imported=written, failed_records=len(pieces_per_row) - len(complete),
            error="; ".join(errors[:3]) or None,
        )  # fmt: skip
    left = len(pieces_per_row) - len(complete)
    logger.info("batch job imported", extra={"run_id": run_id, "manifest": manifest, "rows": written, "left": left})
    return {"run_id": run_id, "manifest": manifest, "imported": written, "failed_records": left}


def _batches(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def fail(conn: psycopg.Connection, run_id: str, error: str) -> dict[str, Any]:
    """Record the run as failed (the database stays in its model; a later plan starts over)."""
    conn.execute(
        "UPDATE reembed_runs SET state = 'failed', error = %s, updated_at = now() WHERE id = %s AND state = 'running'",
        (error[:2000], run_id),
    )
    return {"run_id": run_id, "status": "failed"}


def status(conn: psycopg.Connection) -> dict[str, Any]:
    """The database's model and the latest run, for ``rag reembed --status``."""
    active = active_model(conn)
    row = conn.execute(
        """SELECT id, state, source_model_id, target_model_id, manifests, caught_up, error,
                  (SELECT count(*) FROM reembed_manifests m WHERE m.run_id = r.id AND m.state = 'imported')
           FROM reembed_runs r ORDER BY created_at DESC LIMIT 1"""
    ).fetchone()
    run = None
    if row is not None:
        keys = ("id", "state", "source", "target", "manifests", "caught_up", "error", "imported")
        run = dict(zip(keys, row))
    return {"model": active and active[0], "dimension": active and active[1], "run": run}


def jobs_for(settings: Settings) -> tuple[BatchJobs, ManifestStore]:
    """Bedrock's batch inference over the run bucket for a Bedrock target with a bucket; else the local model on disk."""
    from rag.reembed.batch_jobs import BedrockBatchJobs, LocalBatchJobs
    from rag.reembed.storage import LocalManifestStore, S3ManifestStore

    target = target_of(settings)
    if target is not None and settings.reembed.bucket and target.settings.embedding.provider == "bedrock":
        from rag.aws import s3_client

        s3 = S3ManifestStore(settings.reembed.bucket, s3_client(settings))
        return BedrockBatchJobs(target.settings, s3), s3
    local = LocalManifestStore(settings.reembed.local_dir or settings.local.dir / "reembed")
    if target is None:
        from rag.embedding import get_embedder

        return LocalBatchJobs(get_embedder(settings), local, settings), local
    return LocalBatchJobs(target_embedder(target), local, settings), local
