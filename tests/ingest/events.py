"""Build real-shaped AWS events from the documented examples in tests/fixtures/events."""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

EVENTS = Path(__file__).resolve().parents[1] / "fixtures" / "events"


def load(name: str) -> dict[str, Any]:
    return json.loads((EVENTS / name).read_text())


def s3_notification(bucket: str, key: str, *, removed: bool = False, version_id: str | None = None) -> dict[str, Any]:
    """``ObjectCreated:Put`` or ``ObjectRemoved:Delete``; with ``version_id``, of that version (a versioned bucket)."""
    event = load("s3_object_removed.json" if removed else "s3_object_created.json")
    event["Records"][0]["s3"]["bucket"]["name"] = bucket
    event["Records"][0]["s3"]["bucket"]["arn"] = f"arn:aws:s3:::{bucket}"
    event["Records"][0]["s3"]["object"]["key"] = quote_plus(key)  # S3 URL-encodes keys
    if version_id is not None:
        event["Records"][0]["s3"]["object"]["versionId"] = version_id
    return event


def eventbridge(bucket: str, key: str, *, deleted: bool = False) -> dict[str, Any]:
    event = load("eventbridge_object_deleted.json" if deleted else "eventbridge_object_created.json")
    event["detail"]["bucket"]["name"] = bucket
    event["detail"]["object"]["key"] = key
    return event


def sqs_batch(*bodies: str) -> dict[str, Any]:
    template = load("sqs_batch.json")["Records"][0]
    records = []
    for body in bodies:
        record = copy.deepcopy(template)
        record["messageId"] = str(uuid.uuid4())
        record["body"] = body
        records.append(record)
    return {"Records": records}
