"""Ingest Lambda: S3 object changes (via SQS, plain S3 or EventBridge) -> rows in PostgreSQL.

Thin by design: event parsing is Powertools', the work is ``rag.ingest``.
SQS batches report partial failures, so one bad message never re-runs the good ones; a message
that failed for a transient reason (database, S3, embedding provider) comes back with
exponential backoff (``rag.queue_retry``), and a file that can never be ingested is a ``failed``
document, not a retry. A file too large to embed in one invocation is continued by a new message.
A later record of a batch that finds too little time left is not started: it comes back within
seconds (``rag.queue_retry.defer``) for a fresh invocation, and is no error.
An invocation that stored a document starts the backfill state machine unless an execution runs
(``rag.backfill_trigger``); a start that fails is logged, never the batch's failure.
"""

from __future__ import annotations

import time
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from rag.aws import sqs_client
from rag.backfill_trigger import start_backfill_after_ingest
from rag.config import get_settings
from rag.errors import ContinueLater, is_transient
from rag.events import ObjectChange, changes_from_event, changes_from_sqs_body, event_shape
from rag.ingest import Ingestor, build_ingestor
from rag.queue_retry import back_off, continue_later, defer
from rag.store.connection import connection
from rag.tracing import lambda_tracer

logger = Logger(service="ingest")
tracer = lambda_tracer("ingest")  # libraries patched as they are imported: rag.tracing
metrics = Metrics(namespace="MeetingRag", service="ingest")
processor = BatchProcessor(event_type=EventType.SQS)
# Share of an invocation's remaining time the embedding may use: the rest writes the document.
EMBED_SHARE = 0.6
# Time a record needs to be read, parsed, embedded (one batch at least) and written. A later record
# of a batch with less left is deferred; the first always starts, whatever the function's timeout.
MIN_SECONDS_TO_START = 20
_started_in: str | None = None  # request id of the invocation whose first record has started
_stored = False  # whether this invocation stored a document: then it starts the backfill


class NotStarted(Exception):
    """Too little time left in this invocation for the record: deferred, not failed."""


def embed_deadline(remaining_seconds: float) -> float:
    return time.monotonic() + remaining_seconds * EMBED_SHARE


def apply_change(ingestor: Ingestor, change: ObjectChange, embed_until: float) -> None:
    with logger.append_context_keys(s3_key=change.key, bucket=change.bucket, action=change.action):
        try:
            result = ingestor.apply(change, embed_until=embed_until)
        except ContinueLater:
            raise
        except Exception:
            metrics.add_metric(name="IngestErrors", unit=MetricUnit.Count, value=1)
            logger.exception("ingest failed; the message will be retried")
            raise
        metrics.add_metric(name="IngestLatency", unit=MetricUnit.Milliseconds, value=result.seconds * 1000)
        if result.outcome in ("ingested", "unchanged", "deleted", "superseded", "skipped"):
            logger.info(
                result.outcome, extra={"document_id": result.document_id, "chunks": result.chunks, "detail": result.error}
            )
        if result.outcome == "ingested":
            global _stored
            _stored = True
            metrics.add_metric(name="DocumentsIngested", unit=MetricUnit.Count, value=1)
            metrics.add_metric(name="ChunksWritten", unit=MetricUnit.Count, value=result.chunks)
        elif result.outcome == "failed":
            metrics.add_metric(name="DocumentsFailed", unit=MetricUnit.Count, value=1)
            logger.error(
                "file cannot be ingested; recorded as failed", extra={"document_id": result.document_id, "error": result.error}
            )
        elif result.outcome == "rejected":
            metrics.add_metric(name="ObjectsRejected", unit=MetricUnit.Count, value=1)
            logger.error("object key rejected", extra={"error": result.error})


def record_handler(record: SQSRecord, lambda_context: LambdaContext) -> None:
    global _started_in
    remaining = lambda_context.get_remaining_time_in_millis() / 1000
    if remaining < MIN_SECONDS_TO_START and _started_in == lambda_context.aws_request_id:
        delay = defer(sqs_client(get_settings()), record.raw_event)
        logger.info(
            "too little time left to start; message deferred", extra={"remaining_seconds": remaining, "retry_in_seconds": delay}
        )
        raise NotStarted(f"{remaining:.1f} s left; {MIN_SECONDS_TO_START} s needed to start a record")
    _started_in = lambda_context.aws_request_id
    ingest_record(record, embed_deadline(remaining))


@tracer.capture_method
def ingest_record(record: SQSRecord, embed_until: float) -> None:
    ingestor = build_ingestor(get_settings())
    try:
        for change in changes_from_sqs_body(record.body):
            apply_change(ingestor, change, embed_until)
    except ContinueLater as progress:
        continue_later(sqs_client(get_settings()), record.raw_event)
        logger.info("continued in a new invocation", extra={"detail": str(progress)})
    except Exception as exc:
        if is_transient(exc):
            delay = back_off(sqs_client(get_settings()), record.raw_event)
            logger.warning("transient failure; message retried", extra={"retry_in_seconds": delay})
        raise


def start_backfill_if_stored() -> None:
    """Documents stored in this invocation: start the backfill now rather than at the next schedule."""
    if not _stored:
        return
    started = start_backfill_after_ingest(get_settings())
    logger.info("backfill after ingest", extra={"backfill": started})
    if started == "failed":
        metrics.add_metric(name="BackfillStartFailed", unit=MetricUnit.Count, value=1)


def database_is_reachable() -> bool:
    try:
        with connection(get_settings()):
            return True
    except Exception as exc:
        if not is_transient(exc):
            raise
        logger.exception("cannot reach the database; the whole batch is retried with backoff")
        return False


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    global _stored
    _stored = False
    if event_shape(event) == "sqs":
        # Connect before touching any record: a database that is down fails the whole batch at
        # once (each message backed off), rather than each record after its own connect timeout.
        if not database_is_reachable():
            records = event["Records"]
            for record in records:
                back_off(sqs_client(get_settings()), record)
            metrics.add_metric(name="IngestErrors", unit=MetricUnit.Count, value=len(records))
            return {"batchItemFailures": [{"itemIdentifier": record["messageId"]} for record in records]}
        response = process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
        start_backfill_if_stored()
        return response
    ingestor = build_ingestor(get_settings())
    embed_until = embed_deadline(context.get_remaining_time_in_millis() / 1000)
    try:
        for change in changes_from_event(event):
            apply_change(ingestor, change, embed_until)
    finally:
        start_backfill_if_stored()
    return {"batchItemFailures": []}
