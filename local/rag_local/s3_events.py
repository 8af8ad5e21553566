"""S3 event notifications in the shape S3 sends them to SQS, for the records the local reconcile makes up."""

from __future__ import annotations

import secrets
import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote_plus

NOTIFICATION_ID = "ingest"  # the bucket notification's Id (services.create_ingest_resources)


def s3_event(event_name: str, bucket: str, key: str, region: str, *, size: int | None = None,
             etag: str | None = None, version_id: str | None = None) -> dict[str, Any]:  # fmt: skip
    """One S3 event notification, in the shape S3 sends to SQS (the key URL-encoded as S3 does)."""
    obj: dict[str, Any] = {"key": quote_plus(key, safe="/")}
    if size is not None:
        obj["size"] = size
    if etag is not None:
        obj["eTag"] = etag
    if version_id is not None:
        obj["versionId"] = version_id
    obj["sequencer"] = f"{time.time_ns():018X}"
    now = datetime.now(UTC)
    return {
        "Records": [
            {
                "eventVersion": "2.1",
                "eventSource": "aws:s3",
                "awsRegion": region,
                "eventTime": now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z",
                "eventName": event_name,
                "userIdentity": {"principalId": "rag-local-reconcile"},
                "requestParameters": {"sourceIPAddress": "127.0.0.1"},
                "responseElements": {"x-amz-request-id": secrets.token_hex(8).upper(), "x-amz-id-2": secrets.token_urlsafe(48)},
                "s3": {
                    "s3SchemaVersion": "1.0",
                    "configurationId": NOTIFICATION_ID,
                    "bucket": {"name": bucket, "ownerIdentity": {"principalId": "rag-local"}, "arn": f"arn:aws:s3:::{bucket}"},
                    "object": obj,
                },
            }
        ]
    }
