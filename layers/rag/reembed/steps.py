"""The steps of a re-embedding run, as the state machine (infra/constructs/reembed.py) and ``rag reembed`` call them.

plan -> for each manifest: submit, check until done, import -> finish (again while it catches up) -> switched.

- plan (``rag.reembed.plan``): a run and its manifests, id ranges of the embedded tables.
- submit: the range's texts to a JSONL manifest (and which row each record is of), then a batch job.
- import: the job's vectors into ``embedding_alt``; a record Bedrock failed leaves its row to finish. Idempotent.
- finish (``rag.reembed.switch``): the rows no job covered, embedded online, then the swap in one transaction.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from typing import TYPE_CHECKING, Any

import psycopg

from rag.reembed import rows
from rag.reembed.errors import ReembedError
from rag.reembed.manifest import input_key, record_id
from rag.reembed.plan import plan
from rag.reembed.runs import fail, running_target, target_embedder, target_of
from rag.reembed.switch import finish
from rag.store.embedding_space import active_model

if TYPE_CHECKING:
    from rag.config import Settings
    from rag.reembed.batch_jobs import BatchJobs
    from rag.reembed.storage import ManifestStore

logger = logging.getLogger(__name__)


def run_step(
    conn: psycopg.Connection, settings: Settings, jobs: BatchJobs, store: ManifestStore, event: dict[str, Any]
) -> dict[str, Any]:
    """One step of a run, named by ``event["action"]`` (the contract of the state machine's tasks)."""
    action = event.get("action")
    if action == "plan":
        return plan(conn, settings)
    if action == "fail":
        return fail_run(conn, jobs, event.get("run_id"), str(event.get("error") or "the run failed"))
    run_id = _text(event, "run_id")
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


def fail_run(conn: psycopg.Connection, jobs: BatchJobs, run_id: Any, error: str) -> dict[str, Any]:
    """Record the run as failed and stop its jobs still running (they would go on, and bill). A plan that failed
    has no run (``run_id`` null): nothing to record."""
    if not isinstance(run_id, str) or not run_id:
        logger.warning("re-embedding failed before it had a run", extra={"error": error})
        return {"run_id": None, "status": "failed"}
    result = fail(conn, run_id, error)
    running = conn.execute(
        "SELECT job_arn FROM reembed_manifests WHERE run_id = %s AND state = 'submitted' AND job_arn IS NOT NULL",
        (run_id,),
    ).fetchall()
    for (job_arn,) in running:
        jobs.stop(job_arn)
    logger.warning("re-embedding failed", extra={"run_id": run_id, "error": error, "jobs_stopped": len(running)})
    return {**result, "jobs_stopped": len(running)}


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
    errors: list[str] = []
    for line in jobs.output_lines(run_id, manifest, job_arn):
        if not line.strip():
            continue
        number, vector, error = parse_output_line(line)
        if not 0 <= number < len(records):
            raise ReembedError(f"manifest {manifest} of run {run_id} has no record {number}")
        if vector is None or len(vector) != target.dimension:
            errors.append(error or f"record {number}: {len(vector or [])} dimensions, expected {target.dimension}")
            continue
        vectors[number] = vector
    # A row is written only with every piece's vector (a segment is the mean of its pieces').
    pieces_per_row = Counter(piece.row_id for piece in records)
    received = Counter(records[number].row_id for number in vectors)
    complete = {row for row, count in pieces_per_row.items() if received[row] == count}
    by_row = rows.row_vectors(table, [(records[n], v) for n, v in vectors.items() if records[n].row_id in complete])
    left = len(pieces_per_row) - len(complete)
    written = 0
    with conn.transaction():
        for batch in _batches(list(by_row.items()), 1_000):
            written += rows.write_alternate(conn, table, dict(batch), target.model_id)
        _set_manifest(
            conn, run_id, manifest, state="imported", imported=written, failed_records=left,
            error="; ".join(errors[:3]) or None,
        )  # fmt: skip
    logger.info("batch job imported", extra={"run_id": run_id, "manifest": manifest, "rows": written, "left": left})
    return {"run_id": run_id, "manifest": manifest, "imported": written, "failed_records": left}


def _batches(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


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
