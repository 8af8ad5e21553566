"""Backfill stage Lambdas, one handler per stage, called by the backfill state machine.

Thin by design: the work is ``rag.backfill``. Input ``{"stage", "batch_size", "previous"}``,
output the loop's progress (``iteration``, ``processed``, ``failed``, ``remaining``,
``idle_batches`` and running totals; ``idle_batches`` > 0: every remaining document is held
by another runner, and the state machine waits, then leaves them to it). A per-document error is recorded and counted, not raised; an error of
the environment (database, LLM or embedding API) raises ``TransientError``, which the
state machine retries with backoff.

``reembed_handler`` is the re-embedding machine's one Lambda (the same code asset): each event names an action
of ``rag.reembed.steps`` (plan, submit, check, import, finish, fail) and gets its JSON result back.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from rag.backfill.documents import ClaimedDocument
from rag.backfill.errors import TransientError
from rag.backfill.progress import advance, parse_request
from rag.backfill.stages import run_named_stage
from rag.config import get_settings
from rag.errors import is_transient
from rag.store.connection import connection
from rag.tracing import lambda_tracer

logger = Logger(service="backfill")
tracer = lambda_tracer("backfill")  # libraries patched as they are imported: rag.tracing
# One Metrics per stage: each stage is its own Lambda, and its service dimension names the stage.
metrics = {stage: Metrics(namespace="MeetingRag", service=f"backfill-{stage}") for stage in ("segment", "embed", "extract")}


def log_failure(document: ClaimedDocument, error: str | None) -> None:
    if error is not None:
        logger.warning("document failed; error recorded", extra={"document_id": str(document.id), "error": error})


@tracer.capture_method
def run_batch(stage: str, event: dict[str, Any]) -> dict[str, int]:
    request = parse_request(event)
    settings = get_settings()
    logger.append_keys(stage=stage)
    try:
        with connection(settings) as conn:
            result = run_named_stage(conn, settings, stage, request.batch_size, on_document=log_failure)
    except TransientError:
        metrics[stage].add_metric(name="BackfillTransientErrors", unit=MetricUnit.Count, value=1)
        logger.exception("batch rolled back; the state machine retries it")
        raise
    except Exception as exc:
        if is_transient(exc):  # the database is away: worth a retry
            logger.exception("cannot reach the database")
            raise TransientError(f"database unavailable: {exc}") from exc
        raise
    progress = advance(request.previous, result)
    metrics[stage].add_metric(name="DocumentsProcessed", unit=MetricUnit.Count, value=result.processed)
    metrics[stage].add_metric(name="DocumentsFailed", unit=MetricUnit.Count, value=result.failed)
    metrics[stage].add_metric(name="DocumentsRemaining", unit=MetricUnit.Count, value=result.remaining)
    if progress.held_by_others:
        logger.info("nothing claimable: the remaining documents are held by another runner", extra=progress.as_dict())
    else:
        logger.info("batch done", extra=progress.as_dict())
    return progress.as_dict()


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics["segment"].log_metrics
def segment_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    return run_batch("segment", event)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics["embed"].log_metrics
def embed_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    return run_batch("embed", event)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics["extract"].log_metrics
def extract_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    return run_batch("extract", event)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
def reembed_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """One step of a re-embedding run (``{"action": ..., "run_id": ...}``), see ``rag.reembed.steps``."""
    # Imported here: only the re-embed function runs it, the stage functions sharing this file never do.
    from rag.reembed.steps import jobs_for, run_step

    logger.append_keys(action=event.get("action"), run_id=event.get("run_id"))
    settings = get_settings()
    try:
        with connection(settings) as conn:
            result = run_step(conn, settings, *jobs_for(settings), event)
    except TransientError:
        logger.exception("step failed for now; the state machine retries it")
        raise
    except Exception as exc:
        if is_transient(exc):  # the database (or S3, Bedrock) is away: worth a retry
            logger.exception("cannot reach the database or a service")
            raise TransientError(f"database or service unavailable: {exc}") from exc
        raise
    # The plan's manifest list can be long: the log keeps the rest of the result.
    logger.info("step done", extra={"result": {k: v for k, v in result.items() if k != "manifests"}})
    return result
