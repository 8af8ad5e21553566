"""The local AWS side: moto (S3 + SQS) on 127.0.0.1 and the queue worker, in one background process.

``rag up`` starts ``python -m rag_local.services``; ``rag down`` stops it.
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

DLQ_MAX_RECEIVE_COUNT = 3
VISIBILITY_TIMEOUT_SECONDS = 30


@dataclass(frozen=True)
class LocalQueue:
    url: str
    arn: str
    dlq_url: str


def local_aws_environment(settings: Settings) -> dict[str, str]:
    """Environment that points boto3 (and the AWS CLI) at the local moto server."""
    return {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{settings.local_moto_port}",
        "AWS_ACCESS_KEY_ID": os.environ.get("AWS_ACCESS_KEY_ID", "testing"),
        "AWS_SECRET_ACCESS_KEY": os.environ.get("AWS_SECRET_ACCESS_KEY", "testing"),
        "AWS_DEFAULT_REGION": settings.aws_region,
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
                    "Id": "ingest",
                    "QueueArn": queue_arn,
                    "Events": ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"],
                    "Filter": {"Key": {"FilterRules": [{"Name": "prefix", "Value": "projects/"}]}},
                }
            ]
        },
    )
    return LocalQueue(url=queue_url, arn=queue_arn, dlq_url=dlq_url)


def main() -> None:
    from moto.server import ThreadedMotoServer

    from rag.aws import s3_client, sqs_client
    from rag_local import worker
    from rag_local.lambdas import load_handler_module

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    settings = get_settings()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=settings.local_moto_port, verbose=False)
    server.start()
    queue = create_ingest_resources(
        s3_client(settings), sqs_client(settings), settings.local_bucket, settings.local_queue, settings.aws_region
    )
    logger.info("moto on 127.0.0.1:%d, bucket %s, queue %s", settings.local_moto_port, settings.local_bucket, queue.url)
    handler = load_handler_module("ingest").lambda_handler
    from rag.embedding import get_embedder

    get_embedder(settings).embed(["warm up"])  # load the model now, not on the first file
    from rag_local.api_server import make_server

    api = make_server(settings)
    threading.Thread(target=api.serve_forever, name="query-api", daemon=True).start()
    logger.info("query API on http://127.0.0.1:%d", settings.local_api_port)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print("ready", flush=True)
    try:
        worker.run(sqs_client(settings), queue.url, queue.arn, handler, stop)
    finally:
        api.shutdown()
        server.stop()
        sys.exit(0)


if __name__ == "__main__":
    main()
