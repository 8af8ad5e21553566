"""Pipeline status: documents per project and stage, what each backfill stage still has to do,
the knowledge extracted so far, the failures with their errors, and where given objects stand."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rag.knowledge import BACKFILLED

if TYPE_CHECKING:
    import psycopg

KNOWLEDGE_TABLES = tuple(kind.table for kind in BACKFILLED)


@dataclass(frozen=True)
class Failure:
    source_uri: str
    error: str | None


@dataclass(frozen=True)
class BackfillFailure:
    """A document whose last backfill attempt failed; ``exhausted`` when it is no longer retried."""

    source_uri: str
    status: str
    error: str
    attempts: int
    exhausted: bool


@dataclass
class PipelineStatus:
    counts: dict[tuple[str, str], int] = field(default_factory=dict)  # (project_id, status) -> documents
    chunks: int = 0
    failures: list[Failure] = field(default_factory=list)
    pending: dict[str, int] = field(default_factory=dict)  # backfill stage -> documents it would still claim
    knowledge: dict[str, int] = field(default_factory=dict)  # table -> rows (and "open tasks")
    backfill_failures: list[BackfillFailure] = field(default_factory=list)


def _count(conn: psycopg.Connection, query: str) -> int:
    row = conn.execute(query).fetchone()
    return int(row[0]) if row else 0


def pipeline_status(conn: psycopg.Connection, *, model_id: str | None = None, max_failures: int = 50) -> PipelineStatus:
    """Everything `rag status` shows; ``model_id`` (the configured embedding model) enables the stage counts."""
    from rag.store.backfill_queue import MAX_ATTEMPTS, STAGES, count_remaining

    status = PipelineStatus()
    for project, state, count in conn.execute("SELECT project_id, status, count(*) FROM documents GROUP BY 1, 2 ORDER BY 1, 2"):
        status.counts[(project, state)] = count
    status.chunks = _count(conn, "SELECT count(*) FROM chunks")
    status.failures = [
        Failure(*row)
        for row in conn.execute(
            "SELECT source_uri, error FROM documents WHERE status = 'failed' ORDER BY updated_at DESC LIMIT %s",
            (max_failures,),
        )
    ]
    if model_id is not None:
        status.pending = {stage: count_remaining(conn, stage, model_id) for stage in STAGES}
    for table in KNOWLEDGE_TABLES:
        status.knowledge[table] = _count(conn, f"SELECT count(*) FROM {table}")  # noqa: S608 - constants
    status.knowledge["open tasks"] = _count(conn, "SELECT count(*) FROM tasks WHERE status = 'open'")
    status.backfill_failures = [
        BackfillFailure(uri, state, error, attempts, attempts >= MAX_ATTEMPTS)
        for uri, state, error, attempts in conn.execute(
            """SELECT source_uri, status, backfill_error, backfill_attempts FROM documents
               WHERE backfill_error IS NOT NULL ORDER BY updated_at DESC LIMIT %s""",
            (max_failures,),
        )
    ]
    return status


@dataclass(frozen=True)
class ObjectState:
    """The document row of one S3 object: which version it holds (``content_sha256``), its status and error."""

    object_key: str
    content_sha256: str | None
    status: str
    error: str | None
    s3_version_id: str | None = None  # the S3 version the row was last written from (None: an unversioned bucket)


def object_states(conn: psycopg.Connection, bucket: str, keys: Sequence[str]) -> list[ObjectState]:
    """The rows of ``keys`` in ``bucket`` (`rag ingest` waits on them); a key without a row is left out."""
    rows = conn.execute(
        "SELECT object_key, content_sha256, status, error, s3_version_id FROM documents"
        " WHERE bucket = %s AND object_key = ANY(%s)",
        (bucket, list(keys)),
    ).fetchall()
    return [ObjectState(*row) for row in rows]
