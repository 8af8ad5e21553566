"""The local AWS side: moto (S3 + SQS) on 127.0.0.1, the queue worker and the backfill that follows it, in one
background process.

``rag up`` starts ``python -m rag_local.services``; ``rag down`` stops it (SIGTERM). moto keeps its
state in memory: each S3 write is mirrored to disk before moto acknowledges it
(``rag_local.moto_server``, ``durable.write_through``), and ``rag_local.durable`` restores the
bucket on start and reconciles bucket, mirror, queue and ``documents`` rows while running, so a
restart loses nothing; on SIGTERM moto refuses further S3 writes and the bucket is mirrored once
more, a safety net, before the worker's batch ends (``durable.flush_on_stop``).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
from dataclasses import dataclass
from typing import Any

from rag.config import Settings, get_settings

logger = logging.getLogger("rag.services")

# As in AWS (infra/README.md): with the handler's backoff (rag.queue_retry) five deliveries span 7.5 minutes.
DLQ_MAX_RECEIVE_COUNT = 5
VISIBILITY_TIMEOUT_SECONDS = 30
DOCUMENT_PREFIXES = ("projects/", "tenants/")  # what the bucket notifies the queue of (and the reconcile watches)


@dataclass(frozen=True)
class LocalQueue:
    url: str
    arn: str
    dlq_url: str


def local_aws_environment(settings: Settings) -> dict[str, str]:
    """Environment that points boto3 (and the AWS CLI) at the local moto server."""
    return {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{settings.local.moto_port}",
        "AWS_ACCESS_KEY_ID": os.environ.get("AWS_ACCESS_KEY_ID", "testing"),
        "AWS_SECRET_ACCESS_KEY": os.environ.get("AWS_SECRET_ACCESS_KEY", "testing"),
        "AWS_DEFAULT_REGION": settings.aws.region,
    }


def create_ingest_resources(s3: Any, sqs: Any, bucket: str, queue: str, region: str) -> LocalQueue:
    """Bucket -> queue (+DLQ) notifications, as the CDK stack defines them in AWS. Idempotent."""
    dlq_url = sqs.create_queue(QueueName=f"{queue}-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    queue_url = sqs.create_queue(
        QueueName=queue,
        Attributes={
            "VisibilityTimeout": str(VISIBILITY_TIMEOUT_SECONDS),
            "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": DLQ_MAX_RECEIVE_COUNT}),
        },
    )["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    kwargs = {} if region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": region}}
    try:
        s3.create_bucket(Bucket=bucket, **kwargs)
    except (s3.exceptions.BucketAlreadyOwnedByYou, s3.exceptions.BucketAlreadyExists):
        pass
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    s3.put_bucket_notification_configuration(
        Bucket=bucket,
        NotificationConfiguration={
            "QueueConfigurations": [
                {
                    "Id": "ingest" if len(DOCUMENT_PREFIXES) == 1 else f"ingest-{prefix.rstrip('/')}",
                    "QueueArn": queue_arn,
                    "Events": ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"],
                    "Filter": {"Key": {"FilterRules": [{"Name": "prefix", "Value": prefix}]}},
                }
                for prefix in DOCUMENT_PREFIXES
            ]
        },
    )
    return LocalQueue(url=queue_url, arn=queue_arn, dlq_url=dlq_url)


def move_dead_letters(sqs: Any, dlq_url: str, queue_url: str) -> int:
    """Move the DLQ's messages back to the queue (``rag redrive``); returns how many moved.

    moto 5.2.5 has no ``start_message_move_task``, so: receive, send, and delete from the DLQ
    only what was sent. A moved message starts over with a fresh receive count.
    """
    moved = 0
    while True:
        messages = sqs.receive_message(
            QueueUrl=dlq_url, MaxNumberOfMessages=10, WaitTimeSeconds=0, MessageAttributeNames=["All"]
        ).get("Messages", [])
        if not messages:
            return moved
        entries = []
        for i, message in enumerate(messages):
            entry: dict[str, Any] = {"Id": str(i), "MessageBody": message["Body"]}
            attributes = {
                name: {k: v for k, v in value.items() if k in ("DataType", "StringValue", "BinaryValue")}
                for name, value in message.get("MessageAttributes", {}).items()
            }
            if attributes:
                entry["MessageAttributes"] = attributes
            entries.append(entry)
        sent = {item["Id"] for item in sqs.send_message_batch(QueueUrl=queue_url, Entries=entries).get("Successful", [])}
        done = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages) if str(i) in sent]
        if done:
            sqs.delete_message_batch(QueueUrl=dlq_url, Entries=done)
        if len(done) < len(messages):
            logger.warning("%d DLQ messages could not be sent back; they stay in the DLQ", len(messages) - len(done))
        moved += len(done)


def main() -> None:
    from rag.aws import s3_client, sqs_client
    from rag.store.connection import resolve_database_url
    from rag_local import durable, worker
    from rag_local.lambdas import load_handler_module
    from rag_local.mirror import Mirror, mirror_created
    from rag_local.moto_server import MotoServer

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # moto's access log: lines per second, in a log that is kept
    if not os.environ.get("RAG_UPLOAD_BUCKET"):  # the page's uploads go to the local bucket (AWS: the documents bucket)
        os.environ["RAG_UPLOAD_BUCKET"] = get_settings().local.bucket
        get_settings.cache_clear()
    settings = get_settings()
    s3, sqs = s3_client(settings), sqs_client(settings)
    mirror = Mirror.for_settings(settings)
    # Every S3 write to the bucket is on disk before moto acknowledges it (the restore's puts included).
    server = MotoServer(settings.local.moto_port, on_s3_write=durable.write_through(s3, mirror))
    server.start()
    queue = create_ingest_resources(s3, sqs, settings.local.bucket, settings.local.queue, settings.aws.region)
    logger.info("moto on 127.0.0.1:%d, bucket %s, queue %s", settings.local.moto_port, settings.local.bucket, queue.url)
    reconciler = durable.Reconciler(s3, sqs, mirror, queue.url, settings.aws.region, DOCUMENT_PREFIXES)
    # Before anything reconciles: a fresh moto holds nothing, and the mirror is what the bucket held.
    restored = reconciler.restore()
    logger.info("restored %d objects from %s", len(restored), mirror.directory)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())  # from here on a stop closes S3 writes first (flusher)
    threading.Thread(
        target=durable.run, args=(reconciler, lambda: resolve_database_url(settings), stop), name="reconcile", daemon=True
    ).start()
    flusher = threading.Thread(
        target=durable.flush_on_stop, args=(reconciler, stop, server.close_s3_writes), name="flush-on-stop", daemon=True
    )
    flusher.start()
    handler = load_handler_module("ingest").lambda_handler
    from rag.embedding import get_embedder

    get_embedder(settings).embed(["warm up"])  # load the model now, not on the first file
    from rag_local.api_server import make_server

    api = make_server(settings)
    threading.Thread(target=api.serve_forever, name="query-api", daemon=True).start()
    logger.info("query API on http://127.0.0.1:%d", settings.local.api_port)
    # The backfill follows ingest, as the ingest function starts the state machine in AWS.
    from rag_local.backfill import follow_ingest

    backfill_wanted = threading.Event()
    threading.Thread(target=follow_ingest, args=(settings, backfill_wanted, stop), name="backfill", daemon=True).start()
    print("ready", flush=True)
    try:
        # Returns once SIGTERM set `stop` and the batch in hand is done (`rag down` kills it if that takes too long).
        worker.run(
            sqs, queue.url, queue.arn, handler, stop,
            before_batch=lambda batch: mirror_created(s3, mirror, batch),
            after_batch=lambda _: backfill_wanted.set(),
        )  # fmt: skip
    finally:
        stop.set()
        flusher.join()  # S3 writes refused, and the bucket on disk, before moto's memory goes
        api.shutdown()
        server.stop()
        sys.exit(0)


if __name__ == "__main__":
    main()
