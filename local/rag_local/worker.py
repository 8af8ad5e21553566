"""Delivers SQS messages to the ingest handler exactly as Lambda's SQS event source does.

Same batch shape (``{"Records": [...]}`` with ``eventSource: aws:sqs``), and only the
messages the handler did not report in ``batchItemFailures`` are deleted; the others
come back after the visibility timeout and land in the DLQ after maxReceiveCount.
A ``before_batch`` hook sees each batch first (``rag up`` mirrors the new objects to disk
there, so they survive a restart: see ``rag_local.durable``); an ``after_batch`` hook sees what each
delivery did (``rag up`` wakes its backfill there: ``rag_local.backfill.follow_ingest``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rag_local.lambdas import LocalContext

logger = logging.getLogger("rag.worker")
INGEST_TIMEOUT_MS = 120_000  # the ingest function's timeout in AWS (infra/config.py): the handler budgets by it

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
BatchHook = Callable[[list[dict[str, Any]]], None]
DeliveryHook = Callable[["Delivery"], None]


def sqs_lambda_record(message: dict[str, Any], queue_arn: str, region: str) -> dict[str, Any]:
    """One SQS message as Lambda's SQS event source presents it."""
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": message.get("Attributes", {}),
        "messageAttributes": message.get("MessageAttributes", {}),
        "md5OfBody": message.get("MD5OfBody", ""),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }


@dataclass(frozen=True)
class Delivery:
    """What one poll did: messages received, and how many of them the handler failed."""

    received: int = 0
    failed: int = 0


def poll_once(
    sqs: Any, queue_url: str, queue_arn: str, handler: Handler, *, wait_seconds: int = 1, before_batch: BatchHook | None = None
) -> Delivery:
    """Receive up to 10 messages and run the handler on them as one batch (after ``before_batch``)."""
    response = sqs.receive_message(
        QueueUrl=queue_url,
        MaxNumberOfMessages=10,
        WaitTimeSeconds=wait_seconds,
        AttributeNames=["All"],
        MessageAttributeNames=["All"],
    )
    messages = response.get("Messages", [])
    if not messages:
        return Delivery()
    if before_batch is not None:
        try:
            before_batch(messages)
        except Exception:  # the hook must never hold up delivery
            logger.exception("the before-batch hook failed on %d messages; delivering them anyway", len(messages))
    region = queue_arn.split(":")[3]
    event = {"Records": [sqs_lambda_record(m, queue_arn, region) for m in messages]}
    try:
        result = handler(event, LocalContext(function_name="ingest", timeout_ms=INGEST_TIMEOUT_MS))
    except Exception:
        # As in Lambda: an invocation error leaves the whole batch for redelivery.
        logger.exception("ingest handler failed the whole batch of %d messages", len(messages))
        return Delivery(len(messages), len(messages))
    failed = {item["itemIdentifier"] for item in (result or {}).get("batchItemFailures", [])}
    done = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages) if m["MessageId"] not in failed]
    if done:
        sqs.delete_message_batch(QueueUrl=queue_url, Entries=done)
    if failed:
        logger.warning("%d of %d messages failed and will be retried", len(failed), len(messages))
    return Delivery(len(messages), len(failed))


def run(
    sqs: Any,
    queue_url: str,
    queue_arn: str,
    handler: Handler,
    stop: threading.Event,
    before_batch: BatchHook | None = None,
    after_batch: DeliveryHook | None = None,
) -> None:
    """Poll until ``stop`` is set; ``after_batch`` after each batch delivered."""
    while not stop.is_set():
        try:
            delivery = poll_once(sqs, queue_url, queue_arn, handler, wait_seconds=1, before_batch=before_batch)
            if delivery.received and after_batch is not None:
                after_batch(delivery)
        except Exception:
            logger.exception("polling the queue failed; retrying in 2 s")
            stop.wait(2)
