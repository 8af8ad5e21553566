"""What `rag rm PATH --project P` deletes: the file with its sidecar, or everything under a folder."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from rag_local.commands.ingest import objects_at

BUCKET = "rm-bucket"


@pytest.fixture
def s3():
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        for key in (
            "projects/p/meetings/2026-03-04-sync.txt",
            "projects/p/meetings/2026-03-04-sync.txt.meta.json",
            "projects/p/meetings/2026-03-11-sync.txt",
            "projects/p/meetings-old/2025-01-01.txt",
            "projects/p/notes.md",
            "projects/other/notes.md",
        ):
            client.put_object(Bucket=BUCKET, Key=key, Body=b"x")
        yield client


def test_a_file_goes_with_its_sidecar(s3):
    assert objects_at(s3, BUCKET, "projects/p/meetings/2026-03-04-sync.txt") == [
        "projects/p/meetings/2026-03-04-sync.txt",
        "projects/p/meetings/2026-03-04-sync.txt.meta.json",
    ]
    assert objects_at(s3, BUCKET, "projects/p/notes.md") == ["projects/p/notes.md"]


def test_a_folder_is_everything_under_it_and_nothing_that_only_starts_like_it(s3):
    assert objects_at(s3, BUCKET, "projects/p/meetings") == [
        "projects/p/meetings/2026-03-04-sync.txt",
        "projects/p/meetings/2026-03-04-sync.txt.meta.json",
        "projects/p/meetings/2026-03-11-sync.txt",
    ]


def test_a_path_that_is_not_in_the_project_is_nothing(s3):
    assert objects_at(s3, BUCKET, "projects/p/meet") == []
    assert objects_at(s3, BUCKET, "projects/p/missing.txt") == []
