"""S3 / SQS / EventBridge events -> the object changes ingest acts on.

Accepted shapes (parsed with Powertools' data classes):
- SQS batches whose bodies are S3 event notifications (``s3:TestEvent`` bodies are ignored);
- plain S3 event notifications (``{"Records": [{"eventSource": "aws:s3", ...}]}``);
- EventBridge ``Object Created`` / ``Object Deleted`` events from S3.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import unquote_plus

from aws_lambda_powertools.utilities.data_classes import S3Event
from aws_lambda_powertools.utilities.data_classes.s3_event import S3EventBridgeNotificationEvent

from rag.errors import InvalidObjectKey
from rag.storable_text import describe_unstorable, first_unstorable

Action = Literal["created", "removed"]
EventShape = Literal["sqs", "s3", "eventbridge"]

ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")  # tenant and project ids
EVENTBRIDGE_ACTIONS: dict[str, Action] = {"Object Created": "created", "Object Deleted": "removed"}


@dataclass(frozen=True)
class ObjectChange:
    action: Action
    bucket: str
    key: str  # decoded
    version_id: str | None = None
    etag: str | None = None
    sequencer: str | None = None


class UnsupportedEvent(ValueError):
    """The event is none of the shapes this handler accepts."""


def event_shape(event: dict[str, Any]) -> EventShape:
    """Which of the accepted shapes ``event`` is; UnsupportedEvent otherwise."""
    if not isinstance(event, dict):
        raise UnsupportedEvent(f"expected a JSON object event, got {type(event).__name__}")
    records = event.get("Records")
    if isinstance(records, list) and records and isinstance(records[0], dict):
        source = records[0].get("eventSource")
        if source == "aws:sqs":
            return "sqs"
        if source == "aws:s3":
            return "s3"
    if event.get("source") == "aws.s3" and event.get("detail-type") in EVENTBRIDGE_ACTIONS:
        return "eventbridge"
    raise UnsupportedEvent(
        f"expected an SQS batch, an S3 notification or an EventBridge Object Created/Deleted event; got keys {sorted(event)[:8]}"
    )


def changes_from_sqs_body(body: str) -> list[ObjectChange]:
    """The changes in one SQS message body (an S3 notification, or an EventBridge event)."""
    try:
        message = json.loads(body)
    except json.JSONDecodeError as exc:
        raise UnsupportedEvent(f"SQS message body is not JSON: {exc}") from exc
    if isinstance(message, dict) and message.get("Event") == "s3:TestEvent":
        return []
    shape = event_shape(message)
    if shape == "sqs":
        raise UnsupportedEvent("SQS message body is itself an SQS batch")
    return changes_from_event(message)


def changes_from_event(event: dict[str, Any]) -> list[ObjectChange]:
    """The changes of a plain S3 notification or an EventBridge S3 event."""
    shape = event_shape(event)
    if shape == "eventbridge":
        eb = S3EventBridgeNotificationEvent(event)
        obj = eb.detail.object
        return [
            ObjectChange(
                action=EVENTBRIDGE_ACTIONS[eb.detail_type],
                bucket=eb.detail.bucket.name,
                key=obj.key,  # Powertools decodes it
                version_id=obj.get("version-id"),
                etag=obj.get("etag"),
                sequencer=obj.get("sequencer"),
            )
        ]
    if shape == "s3":
        changes = []
        for record in S3Event(event).records:
            action: Action | None
            if record.event_name.startswith("ObjectCreated:"):
                action = "created"
            elif record.event_name.startswith("ObjectRemoved:"):
                action = "removed"
            else:
                action = None  # restores, replication, lifecycle transitions: nothing to do
            if action is None:
                continue
            s3_object = record.s3.get_object
            changes.append(
                ObjectChange(
                    action=action,
                    bucket=record.s3.bucket.name,
                    key=unquote_plus(s3_object.key),  # S3 notifications URL-encode keys
                    version_id=s3_object.get("versionId"),
                    etag=s3_object.get("eTag"),
                    sequencer=s3_object.get("sequencer"),
                )
            )
        return changes
    raise UnsupportedEvent("an SQS batch must be processed record by record")


@dataclass(frozen=True)
class ObjectLocation:
    """Who owns an object, read from where it was written (the ingest contract)."""

    tenant_id: str
    project_id: str


def location_from_key(key: str, default_tenant: str) -> ObjectLocation:
    """``tenants/<tenant_id>/projects/<project_id>/.../<file>``, or ``projects/<project_id>/.../<file>``
    for the deployment's default tenant; InvalidObjectKey otherwise.

    The key is the only source of the tenant: writers are granted their tenant's prefix, so the
    location is what the deployment vouches for, while metadata is whatever the writer says.
    A key the database cannot store (a NUL) is refused too.
    """
    if found := first_unstorable(key):
        raise InvalidObjectKey(f"object key {key!r} holds {describe_unstorable(found[0])}; not ingested")
    parts = key.split("/")
    tenant_id = default_tenant
    if parts[0] == "tenants" and len(parts) >= 3:
        tenant_id, parts = parts[1], parts[2:]
        _check_id(key, "tenant", tenant_id)
    if len(parts) < 3 or parts[0] != "projects" or not parts[-1]:
        raise InvalidObjectKey(
            f"object key {key!r} is not of the form [tenants/<tenant_id>/]projects/<project_id>/.../<file>; not ingested"
        )
    _check_id(key, "project", parts[1])
    return ObjectLocation(tenant_id=tenant_id, project_id=parts[1])


def _check_id(key: str, what: str, value: str) -> None:
    if not ID_PATTERN.match(value):
        raise InvalidObjectKey(
            f"object key {key!r}: {what} id {value!r} must be 1-128 letters, digits, '.', '_' or '-'; not ingested"
        )
