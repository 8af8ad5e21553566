"""Local state survives a restart, and the reconcile re-derives lost work (rag_local.durable).

A restart is two ``mock_aws`` blocks in a row: moto forgets everything between them, as the
services process does when it is killed. What only moto's server shows (its listing of a key it
cannot write as XML) runs against a real moto server on a socket.
"""

from __future__ import annotations

import hashlib
import json
import logging
import socket
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import boto3
import pytest
from moto import mock_aws
from moto.server import ThreadedMotoServer

from rag.events import ObjectChange, changes_from_sqs_body
from rag_local.durable import Reconciler
from rag_local.mirror import Mirror, MirrorEntry
from rag_local.services import LocalQueue, create_ingest_resources
from rag_local.worker import poll_once

BUCKET = "durable-bucket"
KEY = "projects/acme/meetings/kick off 2026-11-02.txt"
BODY = b"Maya: We ship the remote in March.\nJonas: Agreed.\n"


@dataclass
class Aws:
    s3: Any
    sqs: Any
    queue: LocalQueue


@pytest.fixture
def start_aws() -> Iterator[Any]:
    """Starts a fresh moto (and with it, forgets the previous one) each time it is called."""
    current: list[Any] = []

    def start() -> Aws:
        if current:
            current.pop().stop()
        mock = mock_aws()
        mock.start()
        current.append(mock)
        s3 = boto3.client("s3", region_name="us-east-1")
        sqs = boto3.client("sqs", region_name="us-east-1")
        return Aws(s3, sqs, create_ingest_resources(s3, sqs, BUCKET, "ingest", "us-east-1"))

    yield start
    if current:
        current.pop().stop()


def reconciler(aws: Aws, root: Path) -> Reconciler:
    return Reconciler(aws.s3, aws.sqs, Mirror(root, BUCKET), aws.queue.url, "us-east-1")


def drain(aws: Aws) -> list[dict[str, Any]]:
    """Every message on the queue (deleted): the S3 notification bodies, parsed."""
    bodies = []
    while messages := aws.sqs.receive_message(QueueUrl=aws.queue.url, MaxNumberOfMessages=10).get("Messages", []):
        bodies += [json.loads(m["Body"]) for m in messages]
        aws.sqs.delete_message_batch(
            QueueUrl=aws.queue.url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)]
        )
    return bodies


def changes(bodies: list[dict[str, Any]]) -> list[ObjectChange]:
    return [change for body in bodies for change in changes_from_sqs_body(json.dumps(body))]


def insert_row(db: Any, key: str, version_id: str | None) -> None:
    db.execute(
        """INSERT INTO documents (tenant_id, project_id, bucket, object_key, s3_version_id, status)
           VALUES ('default', 'acme', %s, %s, %s, 'raw_ingested')""",
        (BUCKET, key, version_id),
    )


def test_a_restart_restores_every_object_and_its_notification(start_aws, tmp_path):
    aws = start_aws()
    aws.s3.put_object(Bucket=BUCKET, Key=KEY, Body=BODY, Metadata={"meeting-date": "2026-11-02"}, ContentType="text/plain")
    aws.s3.put_object(Bucket=BUCKET, Key="projects/acme/gone.txt", Body=b"A: bye")
    aws.s3.delete_object(Bucket=BUCKET, Key="projects/acme/gone.txt")
    first = reconciler(aws, tmp_path).run_once()  # what the periodic reconcile does (an `aws s3 cp` upload)
    assert first.mirrored == [KEY]

    aws = start_aws()  # the services process was killed: moto held everything in memory
    assert aws.s3.list_objects_v2(Bucket=BUCKET).get("KeyCount") == 0
    restored = reconciler(aws, tmp_path).restore()

    assert restored == [KEY]
    obj = aws.s3.get_object(Bucket=BUCKET, Key=KEY)
    assert obj["Body"].read() == BODY
    assert obj["Metadata"] == {"meeting-date": "2026-11-02"} and obj["ContentType"] == "text/plain"
    with pytest.raises(aws.s3.exceptions.NoSuchKey):
        aws.s3.get_object(Bucket=BUCKET, Key="projects/acme/gone.txt")  # a delete is not undone
    created = [c for c in changes(drain(aws)) if c.action == "created"]
    assert [(c.bucket, c.key) for c in created] == [(BUCKET, KEY)]  # the restore's put re-runs the ingest


def test_the_worker_mirrors_a_created_object_before_the_handler_runs(start_aws, tmp_path):
    from rag_local.mirror import mirror_created

    aws = start_aws()
    mirror = Mirror(tmp_path, BUCKET)
    aws.s3.put_object(Bucket=BUCKET, Key=KEY, Body=BODY)
    on_disk_when_handled: list[bytes | None] = []

    def handler(event, context):
        found = mirror.read(KEY)
        on_disk_when_handled.append(found[1] if found else None)
        return {"batchItemFailures": []}

    while poll_once(aws.sqs, aws.queue.url, aws.queue.arn, handler, wait_seconds=0,
                    before_batch=lambda batch: mirror_created(aws.s3, mirror, batch)).received:  # fmt: skip
        pass
    assert on_disk_when_handled and on_disk_when_handled[-1] == BODY
    entry = mirror.entry(KEY)
    assert entry is not None and entry.etag == hashlib.md5(BODY).hexdigest() and not entry.deleted


def test_an_object_without_a_row_gets_one_synthetic_created_record_in_s3_shape(start_aws, tmp_path, db):
    aws = start_aws()
    version = aws.s3.put_object(Bucket=BUCKET, Key=KEY, Body=BODY)["VersionId"]
    aws.s3.put_object(Bucket=BUCKET, Key="notes/outside-the-prefix.txt", Body=b"x")
    drain(aws)  # its notification was lost (a restart, or the DLQ)
    first = reconciler(aws, tmp_path)

    assert first.run_once(db).created == [KEY]

    [body] = drain(aws)
    [record] = body["Records"]
    assert record["eventSource"] == "aws:s3" and record["eventName"] == "ObjectCreated:Put"
    assert record["eventVersion"] == "2.1" and record["awsRegion"] == "us-east-1"
    assert record["s3"]["bucket"] == {
        "name": BUCKET,
        "ownerIdentity": {"principalId": "rag-local"},
        "arn": f"arn:aws:s3:::{BUCKET}",
    }
    obj = record["s3"]["object"]
    assert obj["key"] == quote_plus(KEY, safe="/") == "projects/acme/meetings/kick+off+2026-11-02.txt"
    assert (obj["size"], obj["eTag"], obj["versionId"]) == (len(BODY), hashlib.md5(BODY).hexdigest(), version)
    int(obj["sequencer"], 16)
    assert changes([body]) == [ObjectChange("created", BUCKET, KEY, version, obj["eTag"], obj["sequencer"])]

    assert first.run_once(db).created == []  # once per version: a message that fails again stays in the DLQ
    insert_row(db, KEY, version)
    assert reconciler(aws, tmp_path).run_once(db).created == []  # a row of this version: nothing to do
    aws.s3.put_object(Bucket=BUCKET, Key=KEY, Body=BODY + b"Priya: And the manual.\n")
    drain(aws)
    assert first.run_once(db).created == [KEY]  # the row records an older version


def test_a_sidecar_is_mirrored_but_never_gets_a_synthetic_record_since_it_never_has_a_row(start_aws, tmp_path, db):
    aws = start_aws()
    sidecar = KEY + ".meta.json"
    aws.s3.put_object(Bucket=BUCKET, Key=sidecar, Body=b'{"meeting_date": "2026-11-02"}')
    drain(aws)
    first = reconciler(aws, tmp_path)

    assert first.run_once(db).created == []
    assert drain(aws) == []
    entry = first.mirror.entry(sidecar)
    assert entry is not None and not entry.deleted


def test_no_synthetic_record_while_the_notification_is_still_queued(start_aws, tmp_path, db):
    aws = start_aws()
    aws.s3.put_object(Bucket=BUCKET, Key=KEY, Body=BODY)
    assert reconciler(aws, tmp_path).run_once(db).created == []
    assert len(changes(drain(aws))) == 1  # moto's own notification only


def test_a_delete_marker_gets_a_synthetic_removed_record(start_aws, tmp_path, db):
    aws = start_aws()
    version = aws.s3.put_object(Bucket=BUCKET, Key=KEY, Body=BODY)["VersionId"]
    insert_row(db, KEY, version)
    drain(aws)
    marker = aws.s3.delete_object(Bucket=BUCKET, Key=KEY)["VersionId"]  # versioned bucket: a delete marker
    assert drain(aws) == []  # moto 5.2.5 sends no notification for it

    assert reconciler(aws, tmp_path).run_once(db).removed == [KEY]

    [body] = drain(aws)
    [record] = body["Records"]
    assert record["eventSource"] == "aws:s3" and record["eventName"] == "ObjectRemoved:DeleteMarkerCreated"
    assert record["s3"]["object"]["key"] == quote_plus(KEY, safe="/") and record["s3"]["object"]["versionId"] == marker
    assert changes([body]) == [ObjectChange("removed", BUCKET, KEY, marker, None, record["s3"]["object"]["sequencer"])]


def test_a_delete_survives_a_restart_as_a_tombstone(start_aws, tmp_path, db):
    aws = start_aws()
    version = aws.s3.put_object(Bucket=BUCKET, Key=KEY, Body=BODY)["VersionId"]
    insert_row(db, KEY, version)
    reconciler(aws, tmp_path).run_once()
    aws.s3.delete_object(Bucket=BUCKET, Key=KEY)
    assert reconciler(aws, tmp_path).run_once().tombstoned == [KEY]  # killed before the rows went

    aws = start_aws()
    after_restart = reconciler(aws, tmp_path)
    assert after_restart.restore() == []  # a tombstone is not put back
    assert after_restart.run_once(db).removed == [KEY]
    assert [c.action for c in changes(drain(aws))] == ["removed"]

    db.execute("DELETE FROM documents WHERE object_key = %s", (KEY,))  # what the handler does with it
    after_restart.run_once(db)
    assert Mirror(tmp_path, BUCKET).entry(KEY) is None  # the delete is complete: the tombstone goes


def test_a_key_uploaded_again_as_its_tombstone_goes_keeps_its_new_object_on_disk(start_aws, tmp_path, db):
    from rag_local.mirror import sync_key

    # GIVEN a deleted key whose rows are gone: the reconcile drops its tombstone
    aws = start_aws()
    aws.s3.put_object(Bucket=BUCKET, Key=KEY, Body=BODY)
    mirror = Mirror(tmp_path, BUCKET)
    sync_key(aws.s3, mirror, KEY)
    aws.s3.delete_object(Bucket=BUCKET, Key=KEY)
    sync_key(aws.s3, mirror, KEY)
    assert mirror.entry(KEY) == MirrorEntry(KEY, deleted=True)

    class UploadAfterReadingTombstones(Mirror):
        reads = 0

        def entries(self) -> dict[str, MirrorEntry]:
            found = super().entries()
            self.reads += 1
            if self.reads == 2:  # the rows pass has read the tombstones: the key is uploaded (and written through)
                aws.s3.put_object(Bucket=BUCKET, Key=KEY, Body=b"Maya: Back again.\n")
                sync_key(aws.s3, self, KEY)
            return found

    # WHEN the key is uploaded again while the reconcile completes the delete
    racing = UploadAfterReadingTombstones(tmp_path, BUCKET)
    Reconciler(aws.s3, aws.sqs, racing, aws.queue.url, "us-east-1").run_once(db)

    # THEN the new object stays on disk
    assert racing.reads >= 2
    assert Mirror(tmp_path, BUCKET).read(KEY)[1] == b"Maya: Back again.\n"


def test_rows_are_never_removed_without_evidence_of_a_delete(start_aws, tmp_path, db):
    aws = start_aws()
    insert_row(db, KEY, "v-from-before-the-mirror")  # ingested before the mirror existed; moto lost the object

    assert reconciler(aws, tmp_path).run_once(db).removed == []
    assert changes(drain(aws)) == []  # (the bucket's s3:TestEvent only)


def test_a_mirror_entry_newer_than_the_listing_is_not_tombstoned(start_aws, tmp_path, monkeypatch):
    from rag_local import durable
    from rag_local.mirror import sync_key

    aws = start_aws()
    mirror = Mirror(tmp_path, BUCKET)
    list_bucket = durable.list_bucket

    def listing_then_upload(s3, bucket):
        state = list_bucket(s3, bucket)  # knows nothing of KEY yet
        aws.s3.put_object(Bucket=BUCKET, Key=KEY, Body=BODY)  # an upload, written through to the mirror, meanwhile
        sync_key(aws.s3, mirror, KEY)
        return state

    monkeypatch.setattr(durable, "list_bucket", listing_then_upload)
    assert reconciler(aws, tmp_path).run_once().tombstoned == []
    assert mirror.read(KEY) == (MirrorEntry(KEY, hashlib.md5(BODY).hexdigest(), "binary/octet-stream"), BODY)

    monkeypatch.setattr(durable, "list_bucket", list_bucket)
    aws.s3.delete_object(Bucket=BUCKET, Key=KEY)
    assert reconciler(aws, tmp_path).run_once().tombstoned == [KEY]  # a real delete still is
    assert mirror.entry(KEY) == MirrorEntry(KEY, deleted=True)


@pytest.fixture
def moto_server() -> Iterator[Aws]:
    """A real moto server on a socket (the way `rag up` runs it), emptied afterwards."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    s3 = boto3.client("s3", region_name="us-east-1", endpoint_url=endpoint)
    sqs = boto3.client("sqs", region_name="us-east-1", endpoint_url=endpoint)
    yield Aws(s3, sqs, create_ingest_resources(s3, sqs, BUCKET, "ingest", "us-east-1"))
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"), timeout=30).close()
    server.stop()


def test_a_key_with_a_control_character_is_rejected_and_the_others_reconciled(moto_server, tmp_path, db, caplog):
    # GIVEN good keys and bad ones; moto's version listing fails with a control character in a key
    aws = moto_server
    good = ["projects/acme/one.txt", "tenants/globex/projects/acme/two.txt"]
    control = "projects/acme/a\x01b.txt"
    bad = [control, "/tenants/globex/projects/acme/leading-slash.txt", "projects%2Facme%2Fencoded.txt"]
    for key in good + bad:
        aws.s3.put_object(Bucket=BUCKET, Key=key, Body=f"A: {key}".encode())
    drain(aws)  # their notifications were lost (a restart, or the DLQ)
    caplog.set_level(logging.INFO, logger="rag.durable")
    first = Reconciler(aws.s3, aws.sqs, Mirror(tmp_path, BUCKET), aws.queue.url, "us-east-1", ("projects/", "tenants/"))

    # WHEN the reconcile runs (twice: the second pass has nothing new to say)
    result = first.run_once(db)
    again = first.run_once(db)

    # THEN the good keys get their synthetic records, every object is on disk, and each bad key is named once
    assert sorted(result.created) == sorted(good) and again.created == []
    assert [(c.action, c.key) for c in sorted(changes(drain(aws)), key=lambda c: c.key)] == [
        ("created", key) for key in sorted(good)
    ]
    assert sorted(result.mirrored) == sorted(good + bad)
    assert Mirror(tmp_path, BUCKET).read(control) == (MirrorEntry(control, hashlib.md5(f"A: {control}".encode()).hexdigest(),
                                                      "binary/octet-stream"), f"A: {control}".encode())  # fmt: skip
    rejected = [r.getMessage() for r in caplog.records if "rejected" in r.getMessage()]
    named = {key: [line for line in rejected if repr(key) in line] for key in bad}
    assert len(rejected) == 3 and all(len(lines) == 1 for lines in named.values()), rejected
    assert "holds the control character '\\x01'" in named[control][0]
    assert "is not of the form [tenants/<tenant_id>/]projects/<project_id>/.../<file>" in named[bad[1]][0]
