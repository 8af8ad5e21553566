"""The documents repository: one document and all its chunks are written in one transaction."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any, cast
from uuid import UUID

from rag.storable_text import storable
from rag.store import keyword_index, timeline
from rag.store.embedding_space import require_model

if TYPE_CHECKING:
    import psycopg

    from rag.parsing.model import Chunk, ParsedDocument

# Column order of the COPY into chunks; CHUNK_COPY_TYPES names their types for binary COPY.
CHUNK_COPY_COLUMNS = (
    "document_id", "tenant_id", "project_id", "chunk_index", "content", "token_count",
    "start_char", "end_char", "start_turn", "end_turn", "speakers", "start_time", "end_time",
    "heading_path", "embedding", "embedding_model",
)  # fmt: skip
CHUNK_COPY_TYPES = (
    "uuid", "text", "text", "int4", "text", "int4",
    "int4", "int4", "int4", "int4", "text[]", "float8", "float8",
    "text[]", "vector", "text",
)  # fmt: skip


@dataclass(frozen=True)
class SourceObject:
    """Where a document came from and who owns it."""

    tenant_id: str
    project_id: str
    bucket: str
    key: str
    version_id: str | None = None
    etag: str | None = None
    content_sha256: str | None = None


@dataclass(frozen=True)
class StoredDocument:
    id: UUID
    tenant_id: str
    project_id: str
    content_sha256: str | None
    status: str
    embedding_model: str | None
    chunk_count: int
    version_id: str | None = None  # the S3 version (or, unversioned, the ETag) its rows were made from
    etag: str | None = None
    title: str | None = None
    meeting_date: date | None = None
    participants: list[str] = field(default_factory=list)

    @property
    def fields(self) -> DocumentFields:
        return DocumentFields(self.title, self.meeting_date, list(self.participants))


@dataclass(frozen=True)
class DocumentFields:
    """Descriptive fields that come from a sidecar, S3 metadata or the parser."""

    title: str | None = None
    meeting_date: date | None = None
    participants: list[str] = field(default_factory=list)


# A failed document's error is read by people: a few lines, never a whole file it may quote.
MAX_ERROR_CHARS = 2000

# New content starts the backfill afresh: no error or attempts carried over from the old one.
_BACKFILL_RESET = {"backfill_error": None, "backfill_attempts": 0}


def find_by_key(conn: psycopg.Connection, bucket: str, key: str) -> StoredDocument | None:
    row = conn.execute(
        """SELECT id, tenant_id, project_id, content_sha256, status, embedding_model, chunk_count, s3_version_id, etag,
                  title, meeting_date, coalesce(participants, '{}')
           FROM documents WHERE bucket = %s AND object_key = %s""",
        (bucket, key),
    ).fetchone()
    return StoredDocument(*row) if row else None


def lock_object(conn: psycopg.Connection, bucket: str, key: str) -> None:
    """Serialize writers of one object until the transaction ends (two invocations racing on one key)."""
    conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{bucket}/{key}",))


class TenantConflict(ValueError):
    """A row for this object belongs to another tenant: a document never changes tenant."""


def touch_version(conn: psycopg.Connection, document_id: UUID, source: SourceObject) -> None:
    """Same content under a new S3 version: record the version, keep every row."""
    conn.execute(
        "UPDATE documents SET s3_version_id = %s, etag = %s, updated_at = now() WHERE id = %s",
        (source.version_id, source.etag, document_id),
    )


def replace_document(
    conn: psycopg.Connection,
    source: SourceObject,
    fields: DocumentFields,
    parsed: ParsedDocument,
    chunks: Sequence[Chunk],
    vectors: Sequence[Sequence[float]],
    model_id: str,
    *,
    statement_timeout_ms: int | None = None,
    check_model: bool = False,
) -> UUID:
    """Insert or replace the document and its chunks atomically (binary COPY); rows made from old content go.

    ``statement_timeout_ms`` bounds each statement (a large document's COPY takes longer than the
    database's default allows a search). ``check_model``: while the corpus moves to another model, commit only if
    the database is still in ``model_id`` (``rag.store.embedding_space.require_model``).
    """
    with conn.transaction():
        if statement_timeout_ms is not None:
            conn.execute("SELECT set_config('statement_timeout', %s, true)", (f"{int(statement_timeout_ms)}ms",))
        document_id = write_document_rows(conn, source, fields, parsed, chunks, vectors, model_id)
        keyword_index.index_document(conn, document_id)
        if check_model:
            require_model(conn, model_id)
    return document_id


def write_document_rows(
    conn: psycopg.Connection,
    source: SourceObject,
    fields: DocumentFields,
    parsed: ParsedDocument,
    chunks: Sequence[Chunk],
    vectors: Sequence[Sequence[float]],
    model_id: str,
) -> UUID:
    """The document row and its chunks, replacing rows made from old content; the caller's transaction.

    The chunks' BM25 bookkeeping is left to the caller (``keyword_index.index_documents``): one
    document at a time on the write path, all documents at once on the bulk path.
    """
    if len(chunks) != len(vectors):
        raise ValueError(f"expected one vector per chunk, got {len(vectors)} for {len(chunks)} chunks")
    document_id = _upsert_document(
        conn,
        source,
        {
            "kind": parsed.kind,
            "format": parsed.format,
            "title": fields.title,
            "meeting_date": fields.meeting_date,
            "participants": fields.participants,
            "body": parsed.text,
            "turns": _turns_json(parsed),
            "status": "raw_ingested",
            "embedding_model": model_id,
            "chunk_count": len(chunks),
            "error": None,
            **_BACKFILL_RESET,
        },
    )
    if _delete_derived_rows(conn, document_id, source):
        timeline.relink(conn, source.tenant_id, source.project_id)
    copy_chunks(conn, document_id, source, chunks, vectors, model_id)
    return document_id


def copy_chunks(
    conn: psycopg.Connection,
    document_id: UUID,
    source: SourceObject,
    chunks: Sequence[Chunk],
    vectors: Sequence[Sequence[float]],
    model_id: str,
) -> None:
    """Binary COPY of chunk rows (the fastest bulk path psycopg offers)."""
    columns = ", ".join(CHUNK_COPY_COLUMNS)
    with conn.cursor() as cur, cur.copy(f"COPY chunks ({columns}) FROM STDIN WITH (FORMAT BINARY)") as copy:
        copy.set_types(CHUNK_COPY_TYPES)
        for chunk, vector in zip(chunks, vectors):
            copy.write_row(
                (
                    document_id, source.tenant_id, source.project_id, chunk.index, chunk.text, chunk.token_count,
                    chunk.start_char, chunk.end_char, chunk.start_turn, chunk.end_turn, list(chunk.speakers),
                    chunk.start_time, chunk.end_time, list(chunk.heading_path), vector_value(vector), model_id,
                )
            )  # fmt: skip


def record_failure(conn: psycopg.Connection, source: SourceObject, fields: DocumentFields, error: str) -> UUID:
    """Keep an unparseable file visible as a ``failed`` document with its error (its old chunks go).

    Whatever the error and fields hold is stored: they may quote the very text the database
    refused (a NUL, a lone surrogate: written as ``\\uXXXX``), and the error is cut to ``MAX_ERROR_CHARS``.
    """
    with conn.transaction():
        document_id = _upsert_document(
            conn,
            source,
            {
                "kind": None,
                "format": None,
                "title": storable(fields.title) if fields.title is not None else None,
                "meeting_date": fields.meeting_date,
                "participants": [storable(name) for name in fields.participants],
                "body": None,
                "turns": None,
                "status": "failed",
                "embedding_model": None,
                "chunk_count": 0,
                "error": storable(error, MAX_ERROR_CHARS),
                **_BACKFILL_RESET,
            },
        )
        if _delete_derived_rows(conn, document_id, source):
            timeline.relink(conn, source.tenant_id, source.project_id)
    return document_id


def delete_by_key(conn: psycopg.Connection, bucket: str, key: str) -> UUID | None:
    """Delete the object's document; its chunks and their BM25 lengths go with it (ON DELETE CASCADE).

    So do its segments, knowledge items and change statements; what they had changed in its
    project's other meetings is recomputed (``timeline.relink``).
    """
    with conn.transaction():
        found = conn.execute(
            "SELECT id, tenant_id, project_id FROM documents WHERE bucket = %s AND object_key = %s FOR UPDATE",
            (bucket, key),
        ).fetchone()
        if not found:
            return None
        document_id, tenant_id, project_id = found
        timeline.lock_project(conn, tenant_id, project_id)
        keyword_index.unindex_document(conn, document_id)
        conn.execute("DELETE FROM documents WHERE id = %s", (document_id,))
        timeline.relink(conn, tenant_id, project_id)
    return cast(UUID, document_id)


def _delete_derived_rows(conn: psycopg.Connection, document_id: UUID, source: SourceObject) -> bool:
    """Everything made from the document's old content: chunks (and their BM25 lengths), segments and their items.

    The items (decisions, risks, opportunities, tasks) and change statements go with their segment
    (ON DELETE CASCADE); the document is back at ``raw_ingested``, so the backfill redoes them.
    Returns whether there were segments (then the caller relinks the project: its items changed).
    """
    keyword_index.unindex_document(conn, document_id)
    conn.execute("DELETE FROM chunks WHERE document_id = %s", (document_id,))
    if conn.execute("SELECT 1 FROM segments WHERE document_id = %s LIMIT 1", (document_id,)).fetchone() is None:
        return False  # a new document (or one never backfilled): nothing of its project's timeline to redo
    timeline.lock_project(conn, source.tenant_id, source.project_id)
    conn.execute("DELETE FROM segments WHERE document_id = %s", (document_id,))
    return True


def _upsert_document(conn: psycopg.Connection, source: SourceObject, values: dict[str, Any]) -> UUID:
    columns = {
        "tenant_id": source.tenant_id,
        "project_id": source.project_id,
        "bucket": source.bucket,
        "object_key": source.key,
        "s3_version_id": source.version_id,
        "etag": source.etag,
        "content_sha256": source.content_sha256,
        **values,
    }
    names = ", ".join(columns)
    placeholders = ", ".join(f"%({name})s" for name in columns)
    fixed = ("bucket", "object_key", "tenant_id", "project_id")  # who owns a document is set once
    updates = ", ".join(f"{name} = EXCLUDED.{name}" for name in columns if name not in fixed)
    row = conn.execute(
        f"""INSERT INTO documents ({names}) VALUES ({placeholders})
            ON CONFLICT (bucket, object_key) DO UPDATE SET {updates}, updated_at = now()
            WHERE documents.tenant_id = EXCLUDED.tenant_id AND documents.project_id = EXCLUDED.project_id
            RETURNING id""",
        columns,
    ).fetchone()
    if row is None:
        raise TenantConflict(
            f"s3://{source.bucket}/{source.key} is already stored for another tenant or project; not overwritten"
        )
    return cast(UUID, row[0])


def _turns_json(parsed: ParsedDocument) -> str | None:
    if not parsed.turns:
        return None
    return json.dumps([[t.speaker, t.start_char, t.end_char, t.start_time, t.end_time] for t in parsed.turns])


def vector_value(values: Sequence[float]) -> Any:
    """pgvector's binary dumper takes a Vector or an ndarray; embedders return lists."""
    from pgvector import Vector

    if isinstance(values, Vector) or hasattr(values, "ndim"):
        return values
    return Vector(list(values))
