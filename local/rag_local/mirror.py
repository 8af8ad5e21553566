"""The local bucket's copy on disk, ``<RAG_LOCAL_DIR>/s3/<bucket>/<sha256 of key>.obj``, and how it is kept.

One JSON header line (key, ETag, content type, user metadata), then the object's bytes; each write goes to a
temporary file renamed over the old one, so a kill leaves the old or the new copy, never half of one. A deleted key
keeps a header-only tombstone until its ``documents`` row is gone. Written before an upload is acknowledged
(``sync_key``, through rag_local.durable.write_through at rag_local.moto_server's gate) and, as a safety net, for each ``ObjectCreated`` record
the worker receives (``mirror_created``). Why and how it is restored and reconciled: rag_local.durable.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_plus

if TYPE_CHECKING:
    from rag.config import Settings

logger = logging.getLogger("rag.durable")

LOCK_STRIPES = 64  # a key's reads and writes of the mirror are serialised by one of these locks


def plain_etag(etag: str | None) -> str | None:
    """An ETag without the quotes S3 puts around it."""
    return etag.strip('"') if etag else None


# --- the mirror ---------------------------------------------------------------------


@dataclass(frozen=True)
class MirrorEntry:
    key: str
    etag: str | None = None
    content_type: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    deleted: bool = False  # a tombstone: the key was deleted and its rows may still exist


class Mirror:
    """The on-disk copy of one bucket (file names are the sha256 of the key: any key fits)."""

    def __init__(self, root: Path, bucket: str) -> None:
        self.bucket = bucket
        self.directory = root / bucket
        self._locks = tuple(threading.Lock() for _ in range(LOCK_STRIPES))

    def lock(self, key: str) -> threading.Lock:
        """Held while a key's state is read from the bucket and written here (``sync_key``)."""
        return self._locks[hash(key) % len(self._locks)]

    @classmethod
    def for_settings(cls, settings: Settings) -> Mirror:
        return cls(settings.local.dir / "s3", settings.local.bucket)

    def _path(self, key: str) -> Path:
        return self.directory / f"{hashlib.sha256(key.encode()).hexdigest()}.obj"

    def write(self, entry: MirrorEntry, data: bytes = b"") -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self._path(entry.key)
        header = {"key": entry.key, "etag": entry.etag, "content_type": entry.content_type,
                  "metadata": entry.metadata, "deleted": entry.deleted}  # fmt: skip
        temporary = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        with open(temporary, "wb") as out:
            out.write(json.dumps(header).encode() + b"\n")
            out.write(data)
        os.replace(temporary, path)

    def entry(self, key: str) -> MirrorEntry | None:
        try:
            with open(self._path(key), "rb") as file:
                return _entry(file.readline())
        except FileNotFoundError:
            return None

    def read(self, key: str) -> tuple[MirrorEntry, bytes] | None:
        try:
            with open(self._path(key), "rb") as file:
                return _entry(file.readline()), file.read()
        except FileNotFoundError:
            return None

    def entries(self) -> dict[str, MirrorEntry]:
        found = {}
        for path in self.directory.glob("*.obj"):
            try:
                with open(path, "rb") as file:
                    entry = _entry(file.readline())
            except (FileNotFoundError, ValueError):
                continue  # removed meanwhile, or not ours
            found[entry.key] = entry
        return found

    def forget_tombstone(self, key: str) -> None:
        """Remove the key's tombstone; a live entry (the key was uploaded again meanwhile) stays."""
        with self.lock(key):
            entry = self.entry(key)
            if entry is not None and entry.deleted:
                self._path(key).unlink(missing_ok=True)


def _entry(header: bytes) -> MirrorEntry:
    fields = json.loads(header)
    return MirrorEntry(fields["key"], fields.get("etag"), fields.get("content_type"),
                       fields.get("metadata") or {}, bool(fields.get("deleted")))  # fmt: skip


def sync_key(s3: Any, mirror: Mirror, key: str) -> MirrorEntry | None:
    """The key as the bucket holds it now, onto disk: its current object, or a tombstone once it is
    gone (when the mirror held it). Returns what was written, None when nothing was.

    The read from the bucket and the write to disk happen under the key's lock: of two passes over
    one key, the one that reads later also writes later, so a slow pass never puts back a state
    older than what another one just wrote.
    """
    with mirror.lock(key):
        try:
            response = s3.get_object(Bucket=mirror.bucket, Key=key)
        except s3.exceptions.NoSuchKey:
            known = mirror.entry(key)
            if known is None or known.deleted:
                return None
            tombstone = MirrorEntry(key, deleted=True)
            mirror.write(tombstone)
            logger.info("s3://%s/%s was deleted; the mirror keeps a tombstone until its rows are gone", mirror.bucket, key)
            return tombstone
        data = response["Body"].read()
        entry = MirrorEntry(key, plain_etag(response.get("ETag")), response.get("ContentType"), response.get("Metadata") or {})
        mirror.write(entry, data)
    logger.info("mirrored s3://%s/%s (%d bytes, etag %s)", mirror.bucket, key, len(data), entry.etag)
    return entry


def mirror_created(s3: Any, mirror: Mirror, messages: Sequence[dict[str, Any]]) -> None:
    """The worker's hook: mirror each object of an ObjectCreated record before the handler runs."""
    for message in messages:
        for bucket, key, etag in _created_objects(message.get("Body", "")):
            if bucket != mirror.bucket:
                continue
            known = mirror.entry(key)
            if known is not None and not known.deleted and known.etag == etag:
                continue  # already on disk (written through when moto acknowledged the upload)
            try:
                sync_key(s3, mirror, key)
            except Exception:
                logger.exception("could not mirror s3://%s/%s; the next reconcile tries again", bucket, key)


def _created_objects(body: str) -> Iterator[tuple[str, str, str | None]]:
    try:
        message = json.loads(body)
    except (TypeError, ValueError):
        return
    records = message.get("Records") if isinstance(message, dict) else None
    for record in records if isinstance(records, list) else []:
        if record.get("eventSource") == "aws:s3" and str(record.get("eventName", "")).startswith("ObjectCreated:"):
            s3 = record.get("s3", {})
            obj = s3.get("object", {})
            yield s3.get("bucket", {}).get("name"), unquote_plus(obj.get("key", "")), plain_etag(obj.get("eTag"))
