"""Ingest one object change: fetch -> parse -> chunk -> embed -> write, idempotently.

- The tenant and project come from the object's key (``rag.events.location_from_key``), never
  from its metadata, and a stored document never changes tenant.
- The sha256 of the content makes a redelivered event (or a re-upload of the same
  bytes) a no-op; changed content replaces the document's rows in one transaction.
- The database ends at the object's latest version whatever order events arrive in: every
  write takes a per-key lock and, inside that transaction, checks with S3 that what it read
  is still the object's current version (else a newer event owns the write). A removal
  likewise deletes rows only if the object is still gone once it holds the lock. If it is not,
  and S3's current version is not the stored one (the newest version or a delete marker was
  deleted, so an earlier version is current again), that version is ingested as on a creation.
- Permanent errors (a file that cannot be parsed, a value PostgreSQL refuses) become
  ``failed`` documents with a readable error, stored whatever text it quotes (``rag.storable_text``);
  transient ones (database, S3, embedding provider: ``rag.errors.is_transient``) raise, so the
  message is retried. A key the database cannot store (a NUL) is rejected, like a key outside
  ``projects/``.
- No connection is held while the content is read, parsed and embedded.
- A meeting's date, title and participants come from its sidecar ``<file>.meta.json``, else the
  object's S3 metadata, else the file's name and content (``rag.meeting_metadata``). A sidecar is
  never a document: its creation, change or removal re-ingests the file it describes, and a write
  also checks that the sidecar it read is still current. A sidecar that does not fit its schema
  makes the file a ``failed`` document whose error names the sidecar. Same content with other
  meeting fields is a changed meeting: its rows are replaced and the backfill redoes it.
- A file too large to embed before ``embed_until`` saves the vectors it has (``ingest_checkpoints``)
  and raises ``ContinueLater``; the handler hands the event to a new invocation, which embeds only
  the rest. The write itself stays one transaction. Two chains can run for one file (S3 delivers an
  event twice; a batch times out after its continuation was sent): saving is idempotent, so they
  share their progress; a duplicate key met on a write means a concurrent invocation wrote first
  and is retried, never a ``failed`` file; writing the current version clears the key's progress,
  a failure only its own content's (a newer version's chain keeps what it saved).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

from rag.errors import ContinueLater, InvalidObjectKey, ParseError, TransientError, describe_failure, is_transient
from rag.events import ObjectChange, ObjectLocation, location_from_key
from rag.meeting_fields import Sidecar, meeting_fields, stated_metadata
from rag.meeting_metadata import (
    MAX_SIDECAR_BYTES,
    MeetingMetadata,
    described_key,
    is_sidecar,
    sidecar_key,
)
from rag.object_versions import etag_of, is_version
from rag.store import checkpoints
from rag.store import documents as repo

if TYPE_CHECKING:
    import psycopg

    from rag.config import Settings
    from rag.embedding.base import Embedder

logger = logging.getLogger(__name__)

Outcome = Literal["ingested", "unchanged", "failed", "deleted", "rejected", "skipped", "superseded"]
Connections = Callable[[], AbstractContextManager["psycopg.Connection"]]


@dataclass(frozen=True)
class IngestResult:
    outcome: Outcome
    key: str
    document_id: str | None = None
    chunks: int = 0
    error: str | None = None
    seconds: float = 0.0


@dataclass(frozen=True)
class FetchedObject:
    data: bytes | None  # None: over the size limit (Settings.ingest.max_object_bytes), left unread
    head: dict[str, Any]  # the GetObject response without its body: VersionId, ETag, Metadata


class Ingestor:
    """Applies object changes to the database; one per warm Lambda (or worker).

    ``connections`` lends a connection for one unit of work (``rag.store.connection.connection``).
    """

    def __init__(self, connections: Connections, s3_client: Any, embedder: Embedder, settings: Settings):
        self.connections = connections
        self.s3 = s3_client
        self.embedder = embedder
        self.settings = settings

    def apply(self, change: ObjectChange, *, embed_until: float | None = None) -> IngestResult:
        """Apply one change; ``embed_until`` (a ``time.monotonic()`` instant) bounds the embedding step."""
        started = time.perf_counter()
        try:
            location = location_from_key(change.key, self.settings.ingest.default_tenant)
        except InvalidObjectKey as exc:
            return IngestResult("rejected", change.key, error=str(exc))
        if is_sidecar(change.key):
            # A sidecar is the meeting fields of the file beside it: any change of it re-ingests that file.
            described = described_key(change.key)
            if is_sidecar(described):
                return IngestResult("rejected", change.key, error=f"{change.key!r} would describe a sidecar; not ingested")
            result = self._ingest(ObjectChange("created", change.bucket, described), location, embed_until)
        elif change.action == "removed":
            result = self._remove(change, location, embed_until)
        else:
            result = self._ingest(change, location, embed_until)
        return IngestResult(**{**result.__dict__, "seconds": time.perf_counter() - started})

    def _remove(self, change: ObjectChange, location: ObjectLocation, embed_until: float | None) -> IngestResult:
        with self.connections() as conn, conn.transaction():
            repo.lock_object(conn, change.bucket, change.key)
            # Checked under the lock: a creation racing this removal either wrote before (and the
            # object exists: keep it) or waits for the lock and then finds the object again.
            current = self._current_version(change)
            if current is None:
                document_id = repo.delete_by_key(conn, change.bucket, change.key)
                checkpoints.clear(conn, change.bucket, change.key)
                return IngestResult("deleted", change.key, document_id=str(document_id) if document_id else None)
            existing = repo.find_by_key(conn, change.bucket, change.key)
        if existing is not None and is_version(current, existing.version_id, existing.etag):
            return IngestResult("skipped", change.key, error="the object exists and its document is its current version")
        # S3 serves another version than the stored one: the newest version (or a delete marker) was
        # deleted, and the previous one is current again. Ingested as a creation would be, with the
        # same lock and version checks (released above: the write takes the lock itself).
        return self._ingest(ObjectChange("created", change.bucket, change.key), location, embed_until)

    def _ingest(self, change: ObjectChange, location: ObjectLocation, embed_until: float | None) -> IngestResult:
        fetched = self._get_object(change)
        if fetched is None:
            return IngestResult("skipped", change.key, error="object no longer exists; its removal event cleans up")
        sidecar = self._get_sidecar(change)
        source = repo.SourceObject(
            tenant_id=location.tenant_id,
            project_id=location.project_id,
            bucket=change.bucket,
            key=change.key,
            version_id=fetched.head.get("VersionId"),
            etag=etag_of(fetched.head),
            content_sha256=hashlib.sha256(fetched.data).hexdigest() if fetched.data is not None else None,
        )
        with self.connections() as conn:
            existing = repo.find_by_key(conn, change.bucket, change.key)
        fields = repo.DocumentFields(title=PurePosixPath(change.key).stem)
        try:
            stated = stated_metadata(fetched.head, sidecar)
            fields = repo.DocumentFields(
                title=stated.title or fields.title, meeting_date=stated.meeting_date, participants=stated.participants or []
            )
            if fetched.data is None:
                size = fetched.head.get("ContentLength")
                limit = self.settings.ingest.max_object_bytes
                raise ParseError(f"file is {size} bytes; the limit is {limit} bytes (RAG_MAX_OBJECT_BYTES)")
            fields, parsed = self._parse(change, fetched.data, stated)
            if (
                existing is not None
                and source.content_sha256 is not None
                and existing.content_sha256 == source.content_sha256
                and existing.status != "failed"
                and existing.embedding_model == self.embedder.model_id
                and existing.fields == fields
            ):
                unchanged = existing
                return self._write(
                    source, lambda conn: _touch(conn, unchanged, source), "unchanged", unchanged.chunk_count, sidecar
                )
            chunks, vectors = self._chunk_and_embed(source, parsed, embed_until)
            return self._write(
                source,
                lambda conn: repo.replace_document(
                    conn, source, fields, parsed, chunks, vectors, self.embedder.model_id,
                    statement_timeout_ms=self.settings.database.write_statement_timeout_ms,
                    check_model=self.settings.reembed.provider is not None,
                ),
                "ingested",
                len(chunks),
                sidecar,
            )  # fmt: skip
        except repo.TenantConflict as exc:
            return IngestResult("rejected", change.key, error=str(exc))
        except Exception as exc:
            if is_transient(exc):
                raise
            if _is_unique_violation(exc):
                # Every write here upserts or runs under the object's lock: a duplicate key means a
                # concurrent invocation wrote the same rows first. The retry finds them.
                raise TransientError(f"s3://{change.bucket}/{change.key}: a concurrent invocation wrote first") from exc
            if not isinstance(exc, ParseError):
                logger.warning("s3://%s/%s failed permanently", change.bucket, change.key, exc_info=True)
            error = describe_failure(exc)
        try:
            failed = fields
            result = self._write(source, lambda conn: repo.record_failure(conn, source, failed, error), "failed", 0, sidecar)
        except repo.TenantConflict as exc:
            return IngestResult("rejected", change.key, error=str(exc))
        return IngestResult(**{**result.__dict__, "error": error}) if result.outcome == "failed" else result

    def _parse(self, change: ObjectChange, data: bytes, stated: MeetingMetadata) -> tuple[repo.DocumentFields, Any]:
        """The parsed file and its meeting fields (what was stated first, then its name and content)."""
        from rag.parsing import parse_document

        parsed = parse_document(data, PurePosixPath(change.key).name)
        return meeting_fields(change.key, stated, parsed), parsed

    def _chunk_and_embed(self, source: repo.SourceObject, parsed: Any, embed_until: float | None) -> tuple[Any, list[Any]]:
        """Chunks and their vectors: everything after parsing that needs no database."""
        from rag.chunking import chunk_document

        chunks = chunk_document(
            parsed,
            self.embedder.count_tokens,
            max_tokens=min(self.settings.ingest.chunk_tokens, self.embedder.max_input_tokens),
            overlap_tokens=self.settings.ingest.chunk_overlap_tokens,
        )
        return chunks, self._embed(source, chunks, embed_until)

    def _embed(self, source: repo.SourceObject, chunks: Any, embed_until: float | None) -> list[Any]:
        """Vectors of ``chunks`` in order, batch by batch; past ``embed_until``, saved and ContinueLater."""
        model_id = self.embedder.model_id
        done: dict[int, Any] = {}
        if embed_until is not None:  # only a run with a deadline can have been continued
            with self.connections() as conn:
                done = checkpoints.load(conn, source, model_id)
        todo = [chunk for chunk in chunks if chunk.index not in done]
        step = self.settings.embedding.batch_size
        fresh: dict[int, Any] = {}
        for start in range(0, len(todo), step):
            batch = todo[start : start + step]
            fresh.update(zip((chunk.index for chunk in batch), self.embedder.embed([chunk.text for chunk in batch])))
            # Checked after a batch, never before: every invocation makes progress.
            if embed_until is not None and start + step < len(todo) and time.monotonic() > embed_until:
                with self.connections() as conn:
                    checkpoints.save(conn, source, model_id, fresh)
                raise ContinueLater(
                    f"s3://{source.bucket}/{source.key}: {len(done) + len(fresh)} of {len(chunks)} chunks embedded;"
                    " a new invocation embeds the rest"
                )
        vectors = {**done, **fresh}
        return [vectors[chunk.index] for chunk in chunks]

    def _write(
        self,
        source: repo.SourceObject,
        write: Callable[[psycopg.Connection], Any],
        outcome: Outcome,
        chunks: int,
        sidecar: Sidecar,
    ) -> IngestResult:
        """Run ``write`` under the object's lock, if what was read (the object and its sidecar) is still current."""
        with self.connections() as conn, conn.transaction():
            repo.lock_object(conn, source.bucket, source.key)
            current = self._current_version(ObjectChange("created", source.bucket, source.key))
            if (
                current is None
                or not is_version(current, source.version_id, source.etag)
                or self._sidecar_changed(sidecar, source.bucket)
            ):
                return IngestResult(
                    "superseded", source.key, error="the object or its sidecar changed or went while this event was"
                    " handled; the event of the newer state writes it"
                )  # fmt: skip
            document_id = write(conn)
            # The current version is written: every saved progress of the key is done with, except
            # after a failure, which is this content's alone (another version's chain keeps its own).
            failed_content = source.content_sha256 if outcome == "failed" else None
            checkpoints.clear(conn, source.bucket, source.key, content_sha256=failed_content)
        return IngestResult(outcome, source.key, document_id=str(document_id), chunks=chunks)

    def _get_object(self, change: ObjectChange) -> FetchedObject | None:
        """The object as it is now (None if gone); a file over the limit is refused from its size, unread."""
        try:
            response = self.s3.get_object(Bucket=change.bucket, Key=change.key)
        except self.s3.exceptions.NoSuchKey:
            return None
        body = response.pop("Body")
        if (response.get("ContentLength") or 0) > self.settings.ingest.max_object_bytes:
            body.close()
            return FetchedObject(None, response)
        return FetchedObject(body.read(), response)

    def _get_sidecar(self, change: ObjectChange) -> Sidecar:
        """The file's sidecar as it is now (its bytes unread when over MAX_SIDECAR_BYTES)."""
        key = sidecar_key(change.key)
        try:
            response = self.s3.get_object(Bucket=change.bucket, Key=key)
        except self.s3.exceptions.NoSuchKey:
            return Sidecar(key)
        body = response.pop("Body")
        size = response.get("ContentLength") or 0
        if size > MAX_SIDECAR_BYTES:
            body.close()
            data = None
        else:
            data = body.read()
        return Sidecar(key, data, response.get("VersionId"), etag_of(response), size)

    def _sidecar_changed(self, sidecar: Sidecar, bucket: str) -> bool:
        """Whether the sidecar came, went or changed since it was read (its own event then writes the file)."""
        current = self._current_version(ObjectChange("created", bucket, sidecar.key))
        if current is None or not sidecar.exists:
            return (current is None) != (not sidecar.exists)
        return not is_version(current, sidecar.version_id, sidecar.etag)

    def _current_version(self, change: ObjectChange) -> dict[str, Any] | None:
        """The object's current HEAD (version id, ETag), or None when it is gone (deleted, or a delete marker)."""
        from botocore.exceptions import ClientError

        try:
            return self.s3.head_object(Bucket=change.bucket, Key=change.key)  # type: ignore[no-any-return]
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise


def _is_unique_violation(exc: BaseException) -> bool:
    import psycopg

    return isinstance(exc, psycopg.errors.UniqueViolation)


def _touch(conn: psycopg.Connection, existing: repo.StoredDocument, source: repo.SourceObject) -> Any:
    repo.touch_version(conn, existing.id, source)
    return existing.id


def build_ingestor(settings: Settings) -> Ingestor:
    """An Ingestor on the process's connection pool, S3 client and embedder (all reused while warm)."""
    from rag.aws import s3_client
    from rag.embedding import get_embedder
    from rag.store.connection import connection

    embedder = get_embedder(settings)
    if settings.reembed.provider is not None:  # a move is configured: embed in the model the database is in now
        from rag.store.embedding_space import active_embedder

        with connection(settings) as conn:
            embedder = active_embedder(conn, settings)
    return Ingestor(lambda: connection(settings), s3_client(settings), embedder, settings)
