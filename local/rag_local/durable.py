"""Local S3 state that survives a restart of ``rag up``, and a reconcile that re-derives lost work.

Why: moto keeps buckets and queues in memory, so killing the services process (``kill -9``,
``rag down``) lost every uploaded object and every queued notification; and moto 5.2.5 sends
no notification for a delete marker on a versioned bucket, so a local delete never reached
the database. The design below works without patching moto; it is the simplest found that
loses nothing:

- **Mirror.** A copy of the bucket on disk (rag_local.mirror), a tombstone for a deleted key until its
  ``documents`` row is gone, so a delete survives a restart too.
- **When the mirror is written.** Before an upload is acknowledged: moto runs behind a gate
  (``rag_local.moto_server``) that, once moto has applied an S3 write and before the client hears
  back, mirrors the keys it wrote (``write_through``: ``sync_key`` for each). If that fails the
  client gets a 500, not an acknowledgement. So an acknowledged upload survives the process
  however it ends, ``kill -9`` included (the file is written, not fsynced: a crash of the machine
  can still lose it). Behind that, safety nets for a write-through that failed: the worker for
  each ``ObjectCreated`` record before it hands the batch to the handler, a reconcile every
  ``RECONCILE_SECONDS`` that lists the bucket, and at a graceful stop (``rag down``, SIGTERM) one
  last pass once moto refuses S3 writes and the ones in flight have ended (``flush_on_stop``).
  Work still queued dies with moto and is done again after the restore below.
- **Restore.** On start, before the worker runs, every mirrored object that the fresh bucket
  does not hold is put back. The puts fire ordinary notifications, so the handler re-checks
  each object: unchanged content is a cheap no-op (sha256), and work whose queued message died
  with moto is done again.
- **Reconcile against the database.** An object whose ``documents`` row is missing or records
  another version gets a synthetic ``ObjectCreated:Put`` record (only while the queue is idle,
  so it never doubles a notification still on its way); a row whose object is gone (a delete
  marker, or a tombstone from before a restart) gets ``ObjectRemoved:DeleteMarkerCreated``. Both
  are in the shape S3 sends, and the handler re-reads the object either way. Each is enqueued
  once per object version and process, so a message that exhausts its retries stays in the
  DLQ (``rag redrive``) instead of looping. A row with no object and no trace of a delete (say,
  ingested before the mirror existed) is logged and left alone: rows are never deleted without
  evidence that the object was.
- **Bad keys.** A key the ingest cannot place (not ``[tenants/<t>/]projects/<p>/.../<file>``: a
  leading ``/``, a URL-encoded ``projects%2F...``) or holding a control character is rejected
  with one log line naming it, and gets no synthetic record; it is still mirrored. moto cannot
  list a bucket's versions once a key holds a control character, so the reconcile then works
  from the current objects (``list_bucket``): one bad key never stops it for the others.
"""

from __future__ import annotations

import json
import logging
import threading
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from rag.meeting_metadata import is_sidecar
from rag_local.mirror import Mirror, plain_etag, sync_key
from rag_local.s3_events import s3_event

if TYPE_CHECKING:
    import psycopg


logger = logging.getLogger("rag.durable")

RECONCILE_SECONDS = 3.0


# --- what the bucket holds ----------------------------------------------------------


@dataclass(frozen=True)
class Current:
    version_id: str | None
    etag: str | None
    size: int


@dataclass(frozen=True)
class BucketState:
    current: dict[str, Current]  # key -> its latest version, for keys that exist
    deleted: dict[str, str | None]  # key -> version id of the delete marker that is its latest version
    versions_listed: bool = True  # False: current objects only (see list_bucket)


def list_bucket(s3: Any, bucket: str) -> BucketState:
    """Every key's latest version and delete marker; the current objects alone when moto cannot list versions.

    moto (5.2.5) answers ListObjectVersions with a 500 once any key holds a character XML cannot
    carry (a control character), and ignores ``EncodingType=url`` there; ListObjectsV2 honours it.
    Without versions the state has no version ids and no delete markers (``versions_listed`` False):
    rows are then matched by ETag, and deletes are known from the mirror's tombstones.
    """
    from botocore.exceptions import ClientError

    current: dict[str, Current] = {}
    deleted: dict[str, str | None] = {}
    try:
        for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
            for version in page.get("Versions", []):
                if version.get("IsLatest"):
                    current[version["Key"]] = Current(
                        version.get("VersionId"), plain_etag(version.get("ETag")), version.get("Size", 0)
                    )
            for marker in page.get("DeleteMarkers", []):
                if marker.get("IsLatest"):
                    deleted[marker["Key"]] = marker.get("VersionId")
    except ClientError as exc:
        if exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") != 500:
            raise
        current = {
            obj["Key"]: Current(None, plain_etag(obj.get("ETag")), obj.get("Size", 0))
            for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket)  # keys URL-encoded, then decoded
            for obj in page.get("Contents", [])
        }
        return BucketState(current, {}, versions_listed=False)
    return BucketState(current, deleted)


def rejected_key(key: str, prefixes: Sequence[str]) -> str | None:
    """Why the reconcile leaves ``key`` alone (a sentence naming it), or None for a key it ingests."""
    from rag.errors import InvalidObjectKey
    from rag.events import location_from_key

    control = next((char for char in key if unicodedata.category(char) == "Cc"), None)
    if control is not None:
        # moto cannot list it with its versions; what the handler makes of its notification is its own business
        return f"object key {key!r} holds the control character {control!r}; the reconcile leaves it alone"
    try:
        location_from_key(key, "default")
    except InvalidObjectKey as exc:
        return str(exc)
    if not key.startswith(tuple(prefixes)):
        return f"object key {key!r} is outside the prefixes the bucket notifies ({', '.join(prefixes)}); not ingested"
    return None


# --- restore and reconcile ----------------------------------------------------------


@dataclass(frozen=True)
class Reconciled:
    """What one pass did, key by key."""

    mirrored: list[str] = field(default_factory=list)
    tombstoned: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)  # synthetic ObjectCreated:Put enqueued
    removed: list[str] = field(default_factory=list)  # synthetic ObjectRemoved:DeleteMarkerCreated enqueued
    unmirrored: list[str] = field(default_factory=list)  # could not be mirrored (logged; the next pass tries again)


def mirror_bucket(s3: Any, mirror: Mirror, state: BucketState, result: Reconciled | None = None) -> Reconciled:
    """Every key whose mirror entry differs from ``state`` onto disk (``sync_key``); adds to ``result``."""
    result = result if result is not None else Reconciled()
    entries = mirror.entries()
    # A live entry the listing lacks is looked up again: it may have been uploaded after the listing.
    changed = [key for key, current in state.current.items()
               if (entry := entries.get(key)) is None or entry.deleted or entry.etag != current.etag]  # fmt: skip
    changed += [key for key, entry in entries.items() if not entry.deleted and key not in state.current]
    for key in changed:
        try:
            written = sync_key(s3, mirror, key)
        except Exception:  # one object that cannot be read must not hold up the others
            logger.exception("could not mirror s3://%s/%r; the next pass tries again", mirror.bucket, key)
            result.unmirrored.append(key)
            continue
        if written is not None:
            (result.tombstoned if written.deleted else result.mirrored).append(key)
    return result


class Reconciler:
    """Keeps mirror, bucket and ``documents`` rows converging; remembers what it enqueued (per process)."""

    def __init__(self, s3: Any, sqs: Any, mirror: Mirror, queue_url: str, region: str,
                 prefixes: Sequence[str] = ("projects/",)) -> None:  # fmt: skip
        self.s3, self.sqs, self.mirror = s3, sqs, mirror
        self.bucket = mirror.bucket
        self.queue_url, self.region = queue_url, region
        self.prefixes = tuple(prefixes)  # the keys the bucket notification covers
        self.enqueued: set[tuple[str, str]] = set()
        self.orphans_reported: set[str] = set()
        self.rejected: dict[str, str] = {}  # key -> why the reconcile leaves it alone (logged once)
        self.versions_listed = True

    def restore(self) -> list[str]:
        """Put back every mirrored object the bucket knows nothing of (a fresh moto: all of them)."""
        state = list_bucket(self.s3, self.bucket)
        restored = []
        for key in sorted(self.mirror.entries()):
            if key in state.current or key in state.deleted:
                continue  # never overwrite what the bucket holds now
            found = self.mirror.read(key)
            if found is None or found[0].deleted:
                continue
            entry, data = found
            extra = {"ContentType": entry.content_type} if entry.content_type else {}
            response = self.s3.put_object(Bucket=self.bucket, Key=key, Body=data, Metadata=entry.metadata, **extra)
            etag = plain_etag(response.get("ETag"))
            if etag != entry.etag:
                self.mirror.write(replace(entry, etag=etag), data)
            # Its notification is on the queue: no synthetic record for this version (known by
            # version id, or by ETag when moto cannot list versions).
            self.enqueued.update({(key, response.get("VersionId") or etag or ""), (key, etag or "")})
            restored.append(key)
            logger.info("restored s3://%s/%s from the local mirror (%d bytes); its notification re-runs the ingest",
                        self.bucket, key, len(data))  # fmt: skip
        return restored

    def run_once(self, conn: psycopg.Connection | None = None) -> Reconciled:
        """Mirror what changed in the bucket; with a connection, also enqueue what the rows miss."""
        state = list_bucket(self.s3, self.bucket)
        result = Reconciled()
        self._report(state)
        mirror_bucket(self.s3, self.mirror, state, result)
        if conn is not None:
            self._sync_rows(conn, state, result)
        return result

    def _report(self, state: BucketState) -> None:
        """One log line per key the reconcile rejects, and one when moto stops (or resumes) listing versions."""
        if state.versions_listed != self.versions_listed:
            self.versions_listed = state.versions_listed
            if state.versions_listed:
                logger.info("s3://%s: moto lists object versions again", self.bucket)
            else:
                logger.warning("s3://%s: moto cannot list object versions (a key holds a control character?); "
                               "reconciling the current objects by ETag", self.bucket)  # fmt: skip
        for key in state.current:
            if key not in self.rejected and (reason := rejected_key(key, self.prefixes)) is not None:
                self.rejected[key] = reason
                logger.warning("rejected an object of s3://%s: %s", self.bucket, reason)

    def _sync_rows(self, conn: psycopg.Connection, state: BucketState, result: Reconciled) -> None:
        idle = self._queue_idle()  # after listing, before reading rows: a row missing now is not on its way
        rows = {
            key: (version_id, etag)
            for key, version_id, etag in conn.execute(
                "SELECT object_key, s3_version_id, etag FROM documents WHERE bucket = %s", (self.bucket,)
            ).fetchall()
        }
        for key, current in state.current.items():
            if key in self.rejected or is_sidecar(key) or _row_matches(rows.get(key), current):
                continue  # a sidecar (<file>.meta.json) never has a row: its file's row is the one to match
            mark = (key, current.version_id or current.etag or "")
            if idle and mark not in self.enqueued:
                self._send(s3_event("ObjectCreated:Put", self.bucket, key, self.region, size=current.size,
                                    etag=current.etag, version_id=current.version_id))  # fmt: skip
                self.enqueued.add(mark)
                result.created.append(key)
                logger.info("s3://%s/%s (version %s) has no up-to-date documents row and nothing is queued: "
                            "enqueued a synthetic ObjectCreated:Put", self.bucket, key, current.version_id)  # fmt: skip
        tombstones = {key for key, entry in self.mirror.entries().items() if entry.deleted}
        for key in rows:
            if key in state.current:
                continue
            if key in state.deleted or key in tombstones:
                marker_version = state.deleted.get(key)
                mark = (key, f"removed:{marker_version}")
                if mark not in self.enqueued:
                    self._send(s3_event("ObjectRemoved:DeleteMarkerCreated", self.bucket, key, self.region,
                                        version_id=marker_version))  # fmt: skip
                    self.enqueued.add(mark)
                    result.removed.append(key)
                    logger.info("s3://%s/%s is deleted but its documents row remains: enqueued a synthetic "
                                "ObjectRemoved:DeleteMarkerCreated", self.bucket, key)  # fmt: skip
            elif key not in self.orphans_reported:
                self.orphans_reported.add(key)
                logger.warning("documents row of s3://%s/%s has no object in the bucket and no record of a delete "
                               "(ingested before the local mirror existed?); left in place", self.bucket, key)  # fmt: skip
        for key in tombstones - rows.keys() - state.current.keys():
            self.mirror.forget_tombstone(key)  # its rows are gone: the delete is complete

    def _queue_idle(self) -> bool:
        names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"]
        attributes = self.sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=names)["Attributes"]
        return all(int(attributes.get(name, 0)) == 0 for name in names)

    def _send(self, event: dict[str, Any]) -> None:
        self.sqs.send_message(QueueUrl=self.queue_url, MessageBody=json.dumps(event))


def _row_matches(row: tuple[str | None, str | None] | None, current: Current) -> bool:
    if row is None:
        return False
    version_id, etag = row
    if version_id and current.version_id:
        return version_id == current.version_id
    return etag is not None and etag == current.etag


def write_through(s3: Any, mirror: Mirror) -> Callable[[str, Sequence[str] | None], None]:
    """What ``rag_local.moto_server`` calls after each S3 write and before the client hears back:
    the written keys of ``mirror``'s bucket onto disk (all its keys when the write does not say
    which). Raises when one cannot be mirrored: the write is then not acknowledged.
    """

    def mirror_written(bucket: str, keys: Sequence[str] | None) -> None:
        if bucket != mirror.bucket:
            return
        if keys is None:  # (a form upload names its key in the body)
            failed = mirror_bucket(s3, mirror, list_bucket(s3, bucket)).unmirrored
            if failed:
                raise OSError(f"could not mirror {', '.join(map(repr, failed))}")
            return
        for key in keys:
            sync_key(s3, mirror, key)

    return mirror_written


def reconcile_with_database(reconciler: Reconciler, database_url: Callable[[], str]) -> Reconciled:
    """One pass on a short-lived connection; without the database, the mirror pass alone."""
    from rag.store.connection import connect

    try:
        conn = connect(database_url())
    except Exception as exc:
        logger.warning("reconcile: database unreachable (%s); mirrored the bucket only", exc)
        return reconciler.run_once(None)
    with conn:
        return reconciler.run_once(conn)


def run(reconciler: Reconciler, database_url: Callable[[], str], stop: threading.Event,
        interval: float = RECONCILE_SECONDS) -> None:  # fmt: skip
    """Reconcile now and every ``interval`` seconds until ``stop`` is set."""
    while True:
        try:
            reconcile_with_database(reconciler, database_url)
        except Exception:
            logger.exception("reconcile pass failed; trying again in %.0f s", interval)
        if stop.wait(interval):
            return


def flush_on_stop(reconciler: Reconciler, stop: threading.Event, close_writes: Callable[[], bool]) -> None:
    """Once ``stop`` is set: no S3 write is acknowledged any more (``close_writes``, which waits for
    those in flight and their write-through), then one last mirror pass.

    Each acknowledged write is on disk already (``write_through``): the pass is a safety net for
    one whose write-through failed (its client got a 500). It runs in a thread of its own, so a
    worker deep in a batch does not hold it up.
    """
    stop.wait()
    if not close_writes():
        logger.warning("S3 writes were still in flight when the last mirror pass began; it may miss them")
    try:
        result = reconciler.run_once()
    except Exception:
        logger.exception("the last mirror pass failed; every acknowledged upload was on disk already")
        return
    logger.info("stopping: S3 writes are refused; the last mirror pass copied %d objects to %s",
                len(result.mirrored), reconciler.mirror.directory)  # fmt: skip
