"""The local S3 -> SQS -> handler path, with moto's real bucket notifications."""

from __future__ import annotations

import json
from urllib.parse import unquote_plus

import boto3
import pytest
from moto import mock_aws

from rag_local.services import create_ingest_resources
from rag_local.worker import poll_once, sqs_lambda_record


def test_sqs_records_have_the_lambda_event_source_shape():
    message = {
        "MessageId": "m1",
        "ReceiptHandle": "r1",
        "Body": "{}",
        "MD5OfBody": "x",
        "Attributes": {"ApproximateReceiveCount": "1"},
    }
    record = sqs_lambda_record(message, "arn:aws:sqs:eu-west-1:123456789012:q", "eu-west-1")
    assert record["eventSource"] == "aws:sqs" and record["awsRegion"] == "eu-west-1"
    assert (record["messageId"], record["receiptHandle"], record["body"]) == ("m1", "r1", "{}")


@pytest.fixture
def aws():
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        sqs = boto3.client("sqs", region_name="us-east-1")
        queue = create_ingest_resources(s3, sqs, "bucket", "ingest", "us-east-1")
        yield s3, sqs, queue


def test_worker_deletes_only_what_the_handler_reports_as_processed(aws):
    s3, sqs, queue = aws
    seen: list[list[str]] = []

    def handler(event, context):
        bodies = [json.loads(r["body"]) for r in event["Records"]]
        seen.append([b.get("Event") or unquote_plus(b["Records"][0]["s3"]["object"]["key"]) for b in bodies])
        failures = [
            {"itemIdentifier": r["messageId"]}
            for r, b in zip(event["Records"], bodies)
            if "Records" in b and b["Records"][0]["s3"]["object"]["key"].endswith("bad.txt")
        ]
        return {"batchItemFailures": failures}

    s3.put_object(Bucket="bucket", Key="projects/p/good.txt", Body=b"A: hi")
    s3.put_object(Bucket="bucket", Key="projects/p/bad.txt", Body=b"A: hi")
    s3.put_object(Bucket="bucket", Key="elsewhere/ignored.txt", Body=b"A: hi")  # outside the notification prefix

    handled = failed = 0
    while (delivery := poll_once(sqs, queue.url, queue.arn, handler, wait_seconds=0)).received > 0:
        handled += delivery.received
        failed += delivery.failed

    keys = [key for batch in seen for key in batch]
    assert "projects/p/good.txt" in keys and "projects/p/bad.txt" in keys
    assert "elsewhere/ignored.txt" not in keys
    assert failed == 1
    attrs = sqs.get_queue_attributes(QueueUrl=queue.url, AttributeNames=["All"])["Attributes"]
    assert attrs["ApproximateNumberOfMessagesNotVisible"] == "1"  # only the failed one waits for a retry


def test_a_handler_crash_leaves_the_whole_batch_for_redelivery(aws):
    s3, sqs, queue = aws
    s3.put_object(Bucket="bucket", Key="projects/p/a.txt", Body=b"A: hi")

    def crash(event, context):
        raise ConnectionError("database is down")

    delivery = poll_once(sqs, queue.url, queue.arn, crash, wait_seconds=0)
    assert delivery.received >= 1 and delivery.failed == delivery.received
    attrs = sqs.get_queue_attributes(QueueUrl=queue.url, AttributeNames=["All"])["Attributes"]
    assert int(attrs["ApproximateNumberOfMessagesNotVisible"]) >= 1


def test_the_worker_tells_after_each_delivered_batch_and_not_after_an_empty_poll(aws):
    import threading

    s3, sqs, queue = aws
    stop = threading.Event()
    deliveries = []

    def after_batch(delivery):
        deliveries.append(delivery)
        stop.set()  # one batch is enough

    s3.put_object(Bucket="bucket", Key="projects/p/a.txt", Body=b"A: hi")
    worker_run(sqs, queue, lambda event, context: {"batchItemFailures": []}, stop, after_batch)

    assert [(d.received, d.failed) for d in deliveries] == [(2, 0)]  # the s3:TestEvent and the object

    stop.clear()
    polls = []
    timer = threading.Timer(1.5, stop.set)  # two empty polls, then the test ends the worker
    timer.start()
    worker_run(sqs, queue, lambda event, context: polls.append(event) or {"batchItemFailures": []}, stop, after_batch)
    assert polls == [] and len(deliveries) == 1


def worker_run(sqs, queue, handler, stop, after_batch):
    from rag_local.worker import run

    run(sqs, queue.url, queue.arn, handler, stop, after_batch=after_batch)
