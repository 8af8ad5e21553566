"""Fixtures of the ingest tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws


@pytest.fixture
def s3(request: pytest.FixtureRequest, database_url: str) -> Iterator[Any]:
    """moto S3 with the test module's ``BUCKET``, versioned as the CDK bucket is."""
    bucket = request.module.BUCKET
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=bucket)
        client.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
        yield client


@pytest.fixture(autouse=True)
def no_saved_progress(request: pytest.FixtureRequest) -> None:
    """No embedding progress left by an earlier test (``ingest_checkpoints`` has no foreign key to documents)."""
    if "db" in request.fixturenames:
        request.getfixturevalue("db").execute("TRUNCATE ingest_checkpoints")
