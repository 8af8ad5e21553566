"""The backfill follows ingest: once documents are stored, the backfill state machine is started.

The schedule stays the safety net; this start makes new documents segmented and extracted within
minutes. At most ``MAX_RUNNING`` executions run: a running execution may be past its segment stage
and would leave a new document to the schedule, so a second one is started beside it; overlapping
executions share the work batch by batch (each claims with ``FOR UPDATE SKIP LOCKED``), and the
stage functions reserve concurrency for two (``backfill_reserved_concurrency``). Ingest functions
finishing batches at once start at most one execution per ``NAME_WINDOW_SECONDS``: they give it the
same name, and Step Functions answers a start of a running execution of that name and input with
that execution. A start that loses a race is no error, and a start that fails is logged, never the
ingest's failure: the documents are stored, and the next start (or the schedule) backfills them.
"""

from __future__ import annotations

import json
import logging
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from rag.config import Settings

logger = logging.getLogger(__name__)

Started = Literal["started", "running", "failed", "off"]
NAME_WINDOW_SECONDS = 10
MAX_RUNNING = 2  # one that may be past its segment stage, one that segments what arrived since


def execution_name(now: datetime) -> str:
    """``after-ingest-20260304T153020``: one name per window of NAME_WINDOW_SECONDS."""
    second = now.second - now.second % NAME_WINDOW_SECONDS
    return f"after-ingest-{now:%Y%m%dT%H%M}{second:02d}"


def start_backfill(client: Any, state_machine_arn: str, execution_input: dict[str, Any], now: datetime | None = None) -> Started:
    """Start the backfill unless MAX_RUNNING executions run: ``started``, ``running`` or ``failed`` (logged, never raised)."""
    payload = json.dumps(execution_input, sort_keys=True)
    try:
        running = client.list_executions(stateMachineArn=state_machine_arn, statusFilter="RUNNING", maxResults=MAX_RUNNING)
        if len(running.get("executions", [])) >= MAX_RUNNING:
            return "running"
        name = execution_name(now or datetime.now(UTC))
        try:
            client.start_execution(stateMachineArn=state_machine_arn, name=name, input=payload)
        except client.exceptions.ExecutionAlreadyExists:
            # The window's execution has already ended (a running one of the same input is returned, not refused):
            # the documents stored since need one of their own.
            client.start_execution(stateMachineArn=state_machine_arn, name=f"{name}-{uuid.uuid4().hex[:8]}", input=payload)
    except Exception as exc:
        if _lost_race(exc):
            return "running"
        logger.warning("could not start the backfill state machine; the next start or the schedule backfills", exc_info=True)
        return "failed"
    return "started"


def start_backfill_after_ingest(settings: Settings) -> Started:
    """``start_backfill`` on the configured state machine; ``off`` when none is configured (locally: ``rag up``'s worker)."""
    if not settings.ingest.backfill_state_machine_arn:
        return "off"
    from rag.aws import stepfunctions_client

    return start_backfill(
        stepfunctions_client(settings), settings.ingest.backfill_state_machine_arn, settings.ingest.backfill_execution_input
    )


def _lost_race(exc: BaseException) -> bool:
    """Another ingest started an execution meanwhile (its name taken again in the same window)."""
    from botocore.exceptions import ClientError

    return isinstance(exc, ClientError) and exc.response.get("Error", {}).get("Code") == "ExecutionAlreadyExists"
