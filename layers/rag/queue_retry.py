"""Retries of SQS messages with exponential backoff, so an outage does not drain the queue into the DLQ;
deferrals, for a message an invocation has no time left to start; and continuations, for work that
goes on in a new invocation.

Lambda's SQS event source returns a failed message after the queue's visibility timeout, the
same wait every time: with a short timeout a few minutes of database outage spends every
receive and parks the whole backlog in the DLQ. A message that failed for a transient
reason is instead hidden for ``30 s x 2^(receives - 1)`` (capped at 15 minutes), so five
receives span about seven and a half minutes before the DLQ takes it.

A deferred message comes back after ``DEFER_SECONDS``, to be started by a fresh invocation; like
any failed message it counts a receive.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Any

logger = logging.getLogger(__name__)

FIRST_RETRY_SECONDS = 30
MAX_RETRY_SECONDS = 15 * 60
DEFER_SECONDS = 5


def retry_delay_seconds(receive_count: int) -> int:
    """How long to hide a message that failed on its ``receive_count``-th receive (1, 2, ...)."""
    return int(min(MAX_RETRY_SECONDS, FIRST_RETRY_SECONDS * 2 ** max(0, receive_count - 1)))


def queue_url(sqs: Any, queue_arn: str) -> str:
    """The queue URL of ``arn:aws:sqs:<region>:<account>:<name>``, as the endpoint in use names it."""
    return _queue_url(sqs, queue_arn)


@lru_cache(maxsize=16)
def _queue_url(sqs: Any, queue_arn: str) -> str:
    parts = queue_arn.split(":")
    if len(parts) != 6 or parts[2] != "sqs":
        raise ValueError(f"expected an SQS queue ARN (arn:aws:sqs:region:account:name), got {queue_arn!r}")
    return str(sqs.get_queue_url(QueueName=parts[5], QueueOwnerAWSAccountId=parts[4])["QueueUrl"])


def back_off(sqs: Any, record: dict[str, Any]) -> int | None:
    """Hide the SQS ``record`` (Lambda's record shape) for its backoff; the delay, or None if that failed.

    A failure here only loses the backoff: the message still returns after the queue's own timeout.
    """
    receives = int((record.get("attributes") or {}).get("ApproximateReceiveCount") or 1)
    return _hide(sqs, record, retry_delay_seconds(receives))


def defer(sqs: Any, record: dict[str, Any]) -> int | None:
    """Bring the SQS ``record`` back after ``DEFER_SECONDS`` (it was not started); the delay, or None if that failed."""
    return _hide(sqs, record, DEFER_SECONDS)


def _hide(sqs: Any, record: dict[str, Any], seconds: int) -> int | None:
    try:
        sqs.change_message_visibility(
            QueueUrl=queue_url(sqs, record["eventSourceARN"]),
            ReceiptHandle=record["receiptHandle"],
            VisibilityTimeout=seconds,
        )
    except Exception:
        logger.warning("could not delay message %s; it returns after the queue's timeout", record.get("messageId"), exc_info=True)
        return None
    return seconds


def continue_later(sqs: Any, record: dict[str, Any]) -> None:
    """Send the SQS ``record``'s body again as a new message: a new invocation takes the work on.

    A new message, not a retry: it starts at receive count 1, so a large file's continuations
    never count towards the DLQ. Raises if the send fails (the record then fails and is retried).
    """
    sqs.send_message(QueueUrl=queue_url(sqs, record["eventSourceARN"]), MessageBody=record["body"])
