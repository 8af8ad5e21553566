"""boto3 clients, created once per process and pointed at moto locally."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rag.config import Settings


@lru_cache(maxsize=8)
def _client(service: str, region: str, endpoint_url: str | None) -> Any:
    import boto3

    return boto3.client(service, region_name=region, endpoint_url=endpoint_url)


def s3_client(settings: Settings) -> Any:
    return _client("s3", settings.aws_region, settings.aws_endpoint_url)


def sqs_client(settings: Settings) -> Any:
    return _client("sqs", settings.aws_region, settings.aws_endpoint_url)


def stepfunctions_client(settings: Settings) -> Any:
    return _client("stepfunctions", settings.aws_region, settings.aws_endpoint_url)
