"""Ingest one object change: fetch -> parse -> chunk -> embed -> write, idempotently.

- The sha256 of the content makes a redelivered event (or a re-upload of the same
  bytes) a no-op; changed content replaces the document's rows in one transaction.
- The object is always read as it is *now*, so events arriving out of order converge
  on the latest state: a stale "created" re-reads the newest bytes, a "removed" for a
  key that exists again is ignored.
- Unparseable files become ``failed`` documents with a readable error (not retried);
  transient failures (S3, database, embedding provider) raise so the message is retried.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from dataclasses import dataclass
from datetime import date
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

from rag.errors import InvalidObjectKey, ParseError
from rag.events import ObjectChange, project_from_key
from rag.store import documents as repo

if TYPE_CHECKING:
    import psycopg

    from rag.config import Settings
    from rag.embedding.base import Embedder

logger = logging.getLogger(__name__)

Outcome = Literal["ingested", "unchanged", "failed", "deleted", "rejected", "skipped"]
DATE_IN_KEY = re.compile(r"(?<!\d)(\d{4}-\d{2}-\d{2})(?!\d)")
MAX_OBJECT_BYTES = 50 * 1024 * 1024  # larger files are refused with a clear error, not loaded into memory


@dataclass(frozen=True)
class IngestResult:
    outcome: Outcome
    key: str
    document_id: str | None = None
    chunks: int = 0
    error: str | None = None
    seconds: float = 0.0


class Ingestor:
    """Applies object changes to the database; one per warm Lambda (or worker)."""

    def __init__(self, conn: psycopg.Connection, s3_client: Any, embedder: Embedder, settings: Settings):
        self.conn = conn
        self.s3 = s3_client
        self.embedder = embedder
        self.settings = settings

    def apply(self, change: ObjectChange) -> IngestResult:
        started = time.perf_counter()
        try:
            project_id = project_from_key(change.key)
        except InvalidObjectKey as exc:
            return IngestResult("rejected", change.key, error=str(exc))
        if change.action == "removed":
            result = self._remove(change)
        else:
            result = self._ingest(change, project_id)
        return IngestResult(**{**result.__dict__, "seconds": time.perf_counter() - started})

    def _remove(self, change: ObjectChange) -> IngestResult:
        if self._object_exists(change):
            return IngestResult("skipped", change.key, error="object exists again; its creation event ingests it")
        document_id = repo.delete_by_key(self.conn, change.bucket, change.key)
        return IngestResult("deleted", change.key, document_id=str(document_id) if document_id else None)

    def _ingest(self, change: ObjectChange, project_id: str) -> IngestResult:
        obj = self._get_object(change)
        if obj is None:
            return IngestResult("skipped", change.key, error="object no longer exists; its removal event cleans up")
        data, head = obj
        metadata = {k.lower(): v for k, v in head.get("Metadata", {}).items()}
        source = repo.SourceObject(
            tenant_id=metadata.get("tenant") or self.settings.default_tenant,
            project_id=project_id,
            bucket=change.bucket,
            key=change.key,
            version_id=head.get("VersionId"),
            etag=(head.get("ETag") or "").strip('"') or None,
            content_sha256=hashlib.sha256(data).hexdigest(),
        )
        existing = repo.find_by_key(self.conn, change.bucket, change.key)
        if (
            existing is not None
            and existing.content_sha256 == source.content_sha256
            and existing.status != "failed"
            and existing.tenant_id == source.tenant_id
            and existing.embedding_model == self.embedder.model_id
        ):
            repo.touch_version(self.conn, existing.id, source)
            return IngestResult("unchanged", change.key, document_id=str(existing.id), chunks=existing.chunk_count)

        from rag.chunking import chunk_document
        from rag.parsing import parse_document

        fields = repo.DocumentFields(title=metadata.get("title") or PurePosixPath(change.key).stem)
        try:
            if len(data) > MAX_OBJECT_BYTES:
                raise ParseError(f"file is {len(data)} bytes; the limit is {MAX_OBJECT_BYTES} bytes")
            fields = document_fields(change.key, metadata)
            parsed = parse_document(data, PurePosixPath(change.key).name)
        except ParseError as exc:
            document_id = repo.record_failure(self.conn, source, fields, str(exc))
            return IngestResult("failed", change.key, document_id=str(document_id), error=str(exc))

        fields = repo.DocumentFields(
            title=fields.title or parsed.title or PurePosixPath(change.key).stem,
            meeting_date=fields.meeting_date or parsed.meeting_date,
            participants=fields.participants or parsed.participants or _speakers(parsed),
        )
        chunks = chunk_document(
            parsed,
            self.embedder.count_tokens,
            max_tokens=min(self.settings.chunk_tokens, self.embedder.max_input_tokens),
            overlap_tokens=self.settings.chunk_overlap_tokens,
        )
        vectors = self.embedder.embed([chunk.text for chunk in chunks])
        document_id = repo.replace_document(
            self.conn, source, fields, parsed, chunks, vectors, self.embedder.model_id
        )
        return IngestResult("ingested", change.key, document_id=str(document_id), chunks=len(chunks))

    def _get_object(self, change: ObjectChange) -> tuple[bytes, dict[str, Any]] | None:
        try:
            response = self.s3.get_object(Bucket=change.bucket, Key=change.key)
        except self.s3.exceptions.NoSuchKey:
            return None
        return response["Body"].read(), response

    def _object_exists(self, change: ObjectChange) -> bool:
        from botocore.exceptions import ClientError

        try:
            self.s3.head_object(Bucket=change.bucket, Key=change.key)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return False
            raise
        return True


def document_fields(key: str, metadata: dict[str, str]) -> repo.DocumentFields:
    """Title, meeting date and participants from S3 user metadata (or a date in the key)."""
    raw_date = metadata.get("meeting-date")
    meeting_date = None
    if raw_date:
        try:
            meeting_date = date.fromisoformat(raw_date.strip()[:10])
        except ValueError as exc:
            raise ParseError(f"metadata meeting-date {raw_date!r} is not an ISO 8601 date (YYYY-MM-DD)") from exc
    elif match := DATE_IN_KEY.search(key):
        try:
            meeting_date = date.fromisoformat(match[1])
        except ValueError:
            meeting_date = None
    participants = [p.strip() for p in metadata.get("participants", "").split(",") if p.strip()]
    return repo.DocumentFields(title=metadata.get("title") or None, meeting_date=meeting_date, participants=participants)


def _speakers(parsed: Any) -> list[str]:
    return list(dict.fromkeys(turn.speaker for turn in parsed.turns))


def build_ingestor(settings: Settings) -> Ingestor:
    """An Ingestor on the process-wide connection, S3 client and embedder (all reused while warm)."""
    from rag.aws import s3_client
    from rag.embedding import get_embedder
    from rag.store.connection import get_connection

    return Ingestor(get_connection(settings), s3_client(settings), get_embedder(settings), settings)
