"""The ingest Lambda end to end: real events, moto S3, real PostgreSQL, the real local model."""

from __future__ import annotations

import json
import logging

import boto3
import pytest

from rag_local.lambdas import LocalContext, load_handler_module
from tests.ingest.events import eventbridge, load, s3_notification, sqs_batch

BUCKET = "rag-test-bucket"
KEY = "projects/acme/meetings/2026-11-02-battery.txt"

TRANSCRIPT = "\n".join(
    [
        "Maya: We need to settle the battery question for the remote today.",
        "Jonas: The prototype runs on two AAA cells and lasts about four months.",
        "Priya: Testers asked for a rechargeable option with USB-C.",
        "Ravi: A rechargeable pack adds two dollars forty per unit.",
        "Maya: Decision: rechargeable battery on both models, backlight only on premium.",
    ]
)

pytestmark = pytest.mark.slow


@pytest.fixture
def handler_module(s3, db, local_embedder):
    from rag.aws import _client

    _client.cache_clear()  # boto3 clients must be created inside mock_aws
    return load_handler_module("ingest")


@pytest.fixture
def handler(handler_module):
    return handler_module.lambda_handler


def deliver(handler, *bodies: dict | str) -> dict:
    """Deliver S3 notifications through an SQS batch, as Lambda's event source does."""
    event = sqs_batch(*(b if isinstance(b, str) else json.dumps(b) for b in bodies))
    return handler(event, LocalContext(function_name="ingest"))


def rows(db) -> list[tuple]:
    return db.execute(
        """SELECT d.id, d.tenant_id, d.project_id, d.status, d.kind, c.id, c.chunk_index, c.content
           FROM documents d LEFT JOIN chunks c ON c.document_id = d.id ORDER BY c.chunk_index"""
    ).fetchall()


def test_a_dropped_transcript_becomes_searchable_rows(s3, handler, db, local_embedder):
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=TRANSCRIPT.encode(), Metadata={"participants": "Maya, Jonas, Priya, Ravi"})

    result = deliver(handler, s3_notification(BUCKET, KEY))

    assert result == {"batchItemFailures": []}
    doc = db.execute(
        """SELECT tenant_id, project_id, status, kind, format, title, meeting_date::text, participants,
                  source_uri, embedding_model, chunk_count, body, jsonb_array_length(turns)
           FROM documents"""
    ).fetchone()
    assert doc[:7] == ("default", "acme", "raw_ingested", "transcript", "transcript-txt", "2026-11-02-battery", "2026-11-02")
    assert doc[7] == ["Maya", "Jonas", "Priya", "Ravi"]
    assert doc[8] == f"s3://{BUCKET}/{KEY}"
    assert doc[9] == local_embedder.model_id
    assert doc[12] == 5
    chunks = db.execute(
        "SELECT content, start_char, end_char, start_turn, end_turn, speakers, vector_dims(embedding) FROM chunks ORDER BY chunk_index"
    ).fetchall()
    assert len(chunks) == doc[10] >= 1
    for content, start, end, _, _, _, dims in chunks:
        assert doc[11][start:end] == content
        assert dims == 384
    assert chunks[0][3] == 0 and chunks[-1][4] == 4
    assert chunks[0][5][0] == "Maya"


def test_the_same_object_delivered_twice_leaves_the_same_rows(s3, handler, db):
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=TRANSCRIPT.encode())
    deliver(handler, s3_notification(BUCKET, KEY))
    first = rows(db)

    deliver(handler, s3_notification(BUCKET, KEY), s3_notification(BUCKET, KEY))

    assert rows(db) == first  # same chunk ids: nothing was rewritten


def test_changed_content_replaces_the_rows_of_the_same_document(s3, handler, db):
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=TRANSCRIPT.encode())
    deliver(handler, s3_notification(BUCKET, KEY))
    (document_id,) = {row[0] for row in rows(db)}

    s3.put_object(Bucket=BUCKET, Key=KEY, Body=b"Maya: Only one line now, about the new launch date.\nJonas: Agreed.")
    deliver(handler, s3_notification(BUCKET, KEY))

    after = rows(db)
    assert {row[0] for row in after} == {document_id}
    assert [row[7] for row in after] == ["Maya: Only one line now, about the new launch date.\nJonas: Agreed."]


def test_a_deleted_object_removes_its_rows(s3, handler, db):
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=TRANSCRIPT.encode())
    deliver(handler, s3_notification(BUCKET, KEY))
    assert rows(db)

    s3.delete_object(Bucket=BUCKET, Key=KEY)
    deliver(handler, s3_notification(BUCKET, KEY, removed=True))

    assert rows(db) == []
    assert db.execute("SELECT count(*) FROM chunks").fetchone()[0] == 0


def test_a_removed_event_for_a_key_that_exists_again_keeps_the_document(s3, handler, db):
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=TRANSCRIPT.encode())
    deliver(handler, s3_notification(BUCKET, KEY))
    before = rows(db)

    deliver(handler, s3_notification(BUCKET, KEY, removed=True))  # stale: the object is still there

    assert rows(db) == before  # same chunk ids: nothing rewritten


def stored_version(db) -> list[tuple]:
    return db.execute(
        "SELECT d.s3_version_id, d.status, c.content FROM documents d JOIN chunks c ON c.document_id = d.id ORDER BY c.chunk_index"
    ).fetchall()


# moto sends no notification when a version is deleted (nor for delete markers): the events are
# built here in S3's shape, ObjectRemoved:Delete naming the deleted version.
def test_deleting_the_newest_version_brings_the_previous_one_back_into_search(s3, handler, db):
    old_text, new_text = "Maya: The launch stays in March.\nJonas: Agreed.", "Maya: The launch moves to May.\nJonas: Fine."
    old = s3.put_object(Bucket=BUCKET, Key=KEY, Body=old_text.encode())["VersionId"]
    deliver(handler, s3_notification(BUCKET, KEY))
    new = s3.put_object(Bucket=BUCKET, Key=KEY, Body=new_text.encode())["VersionId"]
    deliver(handler, s3_notification(BUCKET, KEY))
    assert stored_version(db) == [(new, "raw_ingested", new_text)]

    # WHEN the newest version is deleted (S3 now serves the previous one)
    s3.delete_object(Bucket=BUCKET, Key=KEY, VersionId=new)
    assert s3.get_object(Bucket=BUCKET, Key=KEY)["VersionId"] == old
    result = deliver(handler, s3_notification(BUCKET, KEY, removed=True, version_id=new))

    # THEN the database follows S3: the previous version is what search finds
    assert result == {"batchItemFailures": []}
    assert stored_version(db) == [(old, "raw_ingested", old_text)]


def test_deleting_a_delete_marker_brings_the_object_back(s3, handler, db):
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=TRANSCRIPT.encode())
    deliver(handler, s3_notification(BUCKET, KEY))
    marker = s3.delete_object(Bucket=BUCKET, Key=KEY)["VersionId"]
    deliver(handler, s3_notification(BUCKET, KEY, removed=True, version_id=marker))
    assert rows(db) == []

    # WHEN the delete marker is deleted (the object is restored)
    s3.delete_object(Bucket=BUCKET, Key=KEY, VersionId=marker)
    deliver(handler, s3_notification(BUCKET, KEY, removed=True, version_id=marker))

    # THEN it is searchable again
    current = s3.head_object(Bucket=BUCKET, Key=KEY)["VersionId"]
    assert {row[:2] for row in stored_version(db)} == {(current, "raw_ingested")}


def test_a_poison_message_fails_alone_and_the_rest_of_the_batch_is_committed(s3, handler, db):
    good_key, binary_key = "projects/acme/good.txt", "projects/acme/photo.txt"
    s3.put_object(Bucket=BUCKET, Key=good_key, Body=TRANSCRIPT.encode())
    s3.put_object(Bucket=BUCKET, Key=binary_key, Body=b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00")
    event = sqs_batch(
        json.dumps(s3_notification(BUCKET, good_key)),
        "{not json at all",
        json.dumps(s3_notification(BUCKET, binary_key)),
    )

    result = handler(event, LocalContext())

    poison_id = event["Records"][1]["messageId"]
    assert result == {"batchItemFailures": [{"itemIdentifier": poison_id}]}
    statuses = dict(db.execute("SELECT object_key, status FROM documents").fetchall())
    assert statuses == {good_key: "raw_ingested", binary_key: "failed"}
    error = db.execute("SELECT error FROM documents WHERE object_key = %s", (binary_key,)).fetchone()[0]
    assert error == "photo.txt: an image (PNG); run OCR on it first and upload the text"


def test_s3_test_event_is_ignored(handler, db):
    assert deliver(handler, load("s3_test_event.json")) == {"batchItemFailures": []}
    assert rows(db) == []


class JsonLines(logging.Handler):
    """Collects what the Powertools logger writes, as the JSON objects CloudWatch would get."""

    def __init__(self, formatter: logging.Formatter):
        super().__init__()
        self.setFormatter(formatter)
        self.lines: list[dict] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(self.format(record)))


def test_keys_outside_projects_are_rejected_with_a_clear_log_line(s3, handler, db):
    module = load_handler_module("ingest")
    captured = JsonLines(module.logger.registered_formatter)
    logging.getLogger(module.logger.name).addHandler(captured)
    s3.put_object(Bucket=BUCKET, Key="inbox/notes.txt", Body=TRANSCRIPT.encode())
    try:
        result = deliver(handler, s3_notification(BUCKET, "inbox/notes.txt"))
    finally:
        logging.getLogger(module.logger.name).removeHandler(captured)

    assert result == {"batchItemFailures": []}  # retrying cannot help: logged, not retried
    assert rows(db) == []
    lines = captured.lines
    rejected = [line for line in lines if line.get("message") == "object key rejected"]
    assert rejected and rejected[0]["s3_key"] == "inbox/notes.txt"
    assert "projects/<project_id>" in rejected[0]["error"]


def test_tenant_and_project_come_from_the_key_never_from_metadata(s3, handler, db):
    own, default = "tenants/globex/projects/blue-team/2026/notes.txt", "projects/blue-team/2026/other.txt"
    # Both writers claim another tenant in their metadata: the key decides.
    s3.put_object(Bucket=BUCKET, Key=own, Body=TRANSCRIPT.encode(), Metadata={"tenant": "acme", "title": "Battery review"})
    s3.put_object(Bucket=BUCKET, Key=default, Body=TRANSCRIPT.encode(), Metadata={"tenant": "globex"})
    deliver(handler, s3_notification(BUCKET, own), s3_notification(BUCKET, default))
    assert db.execute("SELECT object_key, tenant_id, project_id, title FROM documents ORDER BY object_key").fetchall() == [
        (default, "default", "blue-team", "other"),
        (own, "globex", "blue-team", "Battery review"),
    ]
    assert db.execute("SELECT DISTINCT tenant_id, project_id FROM chunks ORDER BY 1").fetchall() == [
        ("default", "blue-team"), ("globex", "blue-team"),
    ]  # fmt: skip


def test_a_copy_with_other_metadata_cannot_move_a_document_out_of_its_tenant(s3, handler, db):
    key = "tenants/globex/projects/blue-team/notes.txt"
    s3.put_object(Bucket=BUCKET, Key=key, Body=TRANSCRIPT.encode())
    deliver(handler, s3_notification(BUCKET, key))
    s3.copy_object(
        Bucket=BUCKET, Key=key, CopySource={"Bucket": BUCKET, "Key": key},
        Metadata={"tenant": "acme"}, MetadataDirective="REPLACE",
    )  # fmt: skip
    deliver(handler, s3_notification(BUCKET, key))
    assert db.execute(
        "SELECT DISTINCT d.tenant_id, c.tenant_id FROM documents d JOIN chunks c ON c.document_id = d.id"
    ).fetchall() == [("globex", "globex")]


def test_plain_s3_and_eventbridge_events_are_accepted(s3, handler, db):
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=TRANSCRIPT.encode())
    handler(s3_notification(BUCKET, KEY), LocalContext())
    assert len({row[0] for row in rows(db)}) == 1

    s3.delete_object(Bucket=BUCKET, Key=KEY)
    handler(eventbridge(BUCKET, KEY, deleted=True), LocalContext())
    assert rows(db) == []

    s3.put_object(Bucket=BUCKET, Key=KEY, Body=TRANSCRIPT.encode())
    handler(eventbridge(BUCKET, KEY), LocalContext())
    assert len({row[0] for row in rows(db)}) == 1


def test_a_database_that_is_down_fails_the_whole_batch_with_backoff_and_nothing_written(s3, handler, db, monkeypatch):
    from rag.config import get_settings
    from rag.store.connection import close_pool

    # GIVEN a real queue whose messages come back at once unless someone delays them
    sqs = boto3.client("sqs", region_name="us-east-1")
    queue_url = sqs.create_queue(QueueName="ingest-down", Attributes={"VisibilityTimeout": "0"})["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=TRANSCRIPT.encode())
    sqs.send_message(QueueUrl=queue_url, MessageBody=json.dumps(s3_notification(BUCKET, KEY)))
    (message,) = sqs.receive_message(QueueUrl=queue_url, AttributeNames=["All"])["Messages"]
    event = sqs_batch(message["Body"])
    event["Records"][0].update(
        messageId=message["MessageId"], receiptHandle=message["ReceiptHandle"], eventSourceARN=queue_arn,
        attributes={**event["Records"][0]["attributes"], "ApproximateReceiveCount": "1"},
    )  # fmt: skip
    close_pool()
    monkeypatch.setenv("DATABASE_URL", "postgresql://postgres@127.0.0.1:1/nowhere")
    monkeypatch.setenv("RAG_DATABASE_POOL_TIMEOUT_SECONDS", "1")
    get_settings.cache_clear()
    try:
        # WHEN the handler gets the batch while the database is down
        result = handler(event, LocalContext(function_name="ingest"))
    finally:
        close_pool()
        monkeypatch.undo()
        get_settings.cache_clear()

    # THEN every message is reported failed and hidden for the first backoff step, not retried at once
    assert result == {"batchItemFailures": [{"itemIdentifier": message["MessageId"]}]}
    assert sqs.receive_message(QueueUrl=queue_url).get("Messages", []) == []
    assert rows(db) == []


def queue(name: str, **attributes: str) -> tuple[str, str]:
    """A moto queue: its URL and ARN."""
    sqs = boto3.client("sqs", region_name="us-east-1")
    url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    return url, sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]


def received_batch(queue_url: str, queue_arn: str, count: int) -> tuple[dict, list[dict]]:
    """Receive ``count`` messages and build the SQS event Lambda's event source would deliver."""
    sqs = boto3.client("sqs", region_name="us-east-1")
    messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=count, AttributeNames=["All"])["Messages"]
    assert len(messages) == count
    event = sqs_batch(*(message["Body"] for message in messages))
    for record, message in zip(event["Records"], messages):
        record.update(
            messageId=message["MessageId"], receiptHandle=message["ReceiptHandle"], eventSourceARN=queue_arn,
            attributes={**record["attributes"], **message["Attributes"]},
        )  # fmt: skip
    return event, messages


def s3_key(message: dict) -> str:
    from urllib.parse import unquote_plus

    return unquote_plus(json.loads(message["Body"])["Records"][0]["s3"]["object"]["key"])


class RunningOutOfTime(LocalContext):
    """A Lambda context whose remaining time is given, one value per read (the last one repeats)."""

    def __init__(self, *remaining_ms: int):
        super().__init__(function_name="ingest")
        self.remaining_ms = list(remaining_ms)

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms.pop(0) if len(self.remaining_ms) > 1 else self.remaining_ms[0]


def metric_names(stdout: str) -> set[str]:
    """The metrics the handler published (Embedded Metric Format lines on stdout)."""
    names = set()
    for line in stdout.splitlines():
        if line.startswith("{") and '"_aws"' in line:
            for directive in json.loads(line)["_aws"]["CloudWatchMetrics"]:
                names.update(metric["Name"] for metric in directive["Metrics"])
    return names


def test_a_record_left_without_enough_time_waits_for_a_fresh_invocation_and_is_no_error(s3, handler_module, db, capsys):
    import time

    from moto.sqs.models import sqs_backends

    from rag.queue_retry import DEFER_SECONDS

    # GIVEN a batch of three transcripts, the first of which spends nearly all the invocation's time
    queue_url, queue_arn = queue("ingest-late", VisibilityTimeout="720")
    sqs = boto3.client("sqs", region_name="us-east-1")
    keys = [f"projects/acme/late-{i}.txt" for i in range(3)]
    for key in keys:
        s3.put_object(Bucket=BUCKET, Key=key, Body=TRANSCRIPT.encode())
        sqs.send_message(QueueUrl=queue_url, MessageBody=json.dumps(s3_notification(BUCKET, key)))
    event, messages = received_batch(queue_url, queue_arn, 3)
    first_key = s3_key(messages[0])
    capsys.readouterr()

    # WHEN the handler gets to the second and third records with 4 s left
    before_ms = time.time() * 1000
    result = handler_module.lambda_handler(event, RunningOutOfTime(100_000, 4_000))
    after_ms = time.time() * 1000

    # THEN they are not started: reported failed, and back on the queue within seconds, not the queue's 12 minutes
    late = [message["MessageId"] for message in messages[1:]]
    assert result == {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in late]}
    assert db.execute("SELECT object_key, status FROM documents").fetchall() == [(first_key, "raw_ingested")]
    stored = {m.id: m for m in sqs_backends["123456789012"]["us-east-1"].queues["ingest-late"]._messages}
    for message_id in late:
        assert before_ms + DEFER_SECONDS * 1000 <= stored[message_id].visible_at <= after_ms + DEFER_SECONDS * 1000
    assert 1 <= DEFER_SECONDS <= 10
    # AND that is no error: no IngestErrors metric (the first record's metrics are there)
    published = metric_names(capsys.readouterr().out)
    assert "DocumentsIngested" in published and "IngestErrors" not in published


def test_a_file_too_large_for_one_invocation_continues_in_new_messages(s3, handler_module, db, monkeypatch):
    from rag.config import get_settings

    # GIVEN small chunks and batches, and invocations whose embedding time is spent from the start
    monkeypatch.setattr(handler_module, "EMBED_SHARE", 0.0)
    monkeypatch.setenv("RAG_CHUNK_TOKENS", "32")
    monkeypatch.setenv("RAG_CHUNK_OVERLAP_TOKENS", "0")
    monkeypatch.setenv("RAG_EMBEDDING_BATCH_SIZE", "8")
    get_settings.cache_clear()
    sqs = boto3.client("sqs", region_name="us-east-1")
    queue_url = sqs.create_queue(QueueName="ingest-large")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    body = "\n".join(f"Maya: Part {i} of the long review covers the battery supplier and its delivery dates." for i in range(30))
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=body.encode())
    sqs.send_message(QueueUrl=queue_url, MessageBody=json.dumps(s3_notification(BUCKET, KEY)))

    # WHEN the queue is delivered to the handler until it is empty, as Lambda's event source does
    invocations = 0
    try:
        while messages := sqs.receive_message(QueueUrl=queue_url, AttributeNames=["All"]).get("Messages", []):
            invocations += 1
            event = sqs_batch(messages[0]["Body"])
            event["Records"][0].update(
                messageId=messages[0]["MessageId"], receiptHandle=messages[0]["ReceiptHandle"], eventSourceARN=queue_arn
            )
            result = handler_module.lambda_handler(event, LocalContext(function_name="ingest"))
            assert result == {"batchItemFailures": []}  # a continuation is not a failure: no retry, no DLQ
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=messages[0]["ReceiptHandle"])
            assert invocations < 30
    finally:
        get_settings.cache_clear()

    # THEN several invocations each embedded a part, and the last wrote the whole document
    chunks = db.execute("SELECT count(*) FROM chunks").fetchone()[0]
    assert invocations == -(-chunks // 8) > 1
    assert db.execute("SELECT status, chunk_count FROM documents").fetchall() == [("raw_ingested", chunks)]
    assert db.execute("SELECT count(*) FROM ingest_checkpoints").fetchone() == (0,)
