"""boto3 clients, created once per process and pointed at moto locally."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rag.config import Settings


@lru_cache(maxsize=8)
def _client(service: str, region: str, endpoint_url: str | None, quick: bool = False) -> Any:
    import boto3

    if not quick:
        return boto3.client(service, region_name=region, endpoint_url=endpoint_url)
    from botocore.config import Config

    # Short timeouts, one retry: for a call that must never hold up the work around it.
    config = Config(connect_timeout=3, read_timeout=10, retries={"total_max_attempts": 2, "mode": "standard"})
    return boto3.client(service, region_name=region, endpoint_url=endpoint_url, config=config)


def s3_client(settings: Settings) -> Any:
    return _client("s3", settings.aws.region, settings.aws.endpoint_url)


def sqs_client(settings: Settings) -> Any:
    return _client("sqs", settings.aws.region, settings.aws.endpoint_url)


def stepfunctions_client(settings: Settings) -> Any:
    """Quick to give up: starting the backfill must never hold up an ingest (rag.backfill_trigger)."""
    return _client("stepfunctions", settings.aws.region, settings.aws.endpoint_url, quick=True)
