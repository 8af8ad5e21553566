from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from rag.reembed.storage import LocalManifestStore, S3ManifestStore

BUCKET = "reembed-test"


@pytest.fixture
def s3_store() -> Iterator[S3ManifestStore]:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield S3ManifestStore(BUCKET, client)


def test_s3_store_writes_jsonl_objects_and_reads_them_back(s3_store: S3ManifestStore) -> None:
    s3_store.put_text("reembed/run1/input/00000.jsonl", '{"a": 1}\n{"a": 2}\n')
    head = s3_store.client.head_object(Bucket=BUCKET, Key="reembed/run1/input/00000.jsonl")
    assert head["ContentType"] == "application/jsonl"
    assert s3_store.get_text("reembed/run1/input/00000.jsonl") == '{"a": 1}\n{"a": 2}\n'
    assert list(s3_store.lines("reembed/run1/input/00000.jsonl")) == ['{"a": 1}', '{"a": 2}']
    assert s3_store.uri("reembed/run1/input/00000.jsonl") == f"s3://{BUCKET}/reembed/run1/input/00000.jsonl"


def test_s3_store_streams_lines_longer_than_a_read_chunk_both_ways(s3_store: S3ManifestStore) -> None:
    # A Titan vector line is about 20 kB: lines span read chunks and the upload spills past memory.
    lines = [json.dumps({"recordId": f"R{n:010d}", "embedding": [n / 7] * 4000}) for n in range(600)]
    s3_store.put_lines("out/big.jsonl.out", iter(lines))
    assert sum(len(line) + 1 for line in lines) > 8 * 1024 * 1024
    assert list(s3_store.lines("out/big.jsonl.out")) == lines


def test_s3_store_lists_keys_sorted_under_a_prefix_across_pages(s3_store: S3ManifestStore) -> None:
    for n in (3, 1, 2):
        s3_store.put_text(f"reembed/run1/output/{n:05d}/x.jsonl.out", "")
    s3_store.put_text("reembed/run10/input/00000.jsonl", "")
    for n in range(1001):  # past one list_objects_v2 page
        s3_store.client.put_object(Bucket=BUCKET, Key=f"reembed/many/{n:05d}", Body=b"")
    assert s3_store.keys("reembed/run1/") == [f"reembed/run1/output/{n:05d}/x.jsonl.out" for n in (1, 2, 3)]
    many = s3_store.keys("reembed/many/")
    assert len(many) == 1001 and many[0] == "reembed/many/00000" and many[-1] == "reembed/many/01000"
    assert s3_store.keys("nothing/") == []


def test_s3_store_missing_key_is_file_not_found(s3_store: S3ManifestStore) -> None:
    with pytest.raises(FileNotFoundError, match=f"s3://{BUCKET}/reembed/none.jsonl"):
        s3_store.get_text("reembed/none.jsonl")
    with pytest.raises(FileNotFoundError):
        list(s3_store.lines("reembed/none.jsonl"))


def test_local_store_keys_are_relative_paths_under_its_root(tmp_path: Path) -> None:
    store = LocalManifestStore(tmp_path)
    store.put_text("reembed/run1/input/00000.jsonl", '{"a": 1}\n\n{"a": 2}')
    store.put_lines("reembed/run1/output/00000/local-run1-0/00000.jsonl.out", iter(["x", "y"]))
    store.put_text("reembed/run10/input/00000.jsonl", "")
    assert (tmp_path / "reembed/run1/input/00000.jsonl").read_text() == '{"a": 1}\n\n{"a": 2}'
    assert store.get_text("reembed/run1/input/00000.jsonl") == '{"a": 1}\n\n{"a": 2}'
    assert list(store.lines("reembed/run1/input/00000.jsonl")) == ['{"a": 1}', '{"a": 2}']
    assert list(store.lines("reembed/run1/output/00000/local-run1-0/00000.jsonl.out")) == ["x", "y"]
    assert store.keys("reembed/run1/") == [
        "reembed/run1/input/00000.jsonl",
        "reembed/run1/output/00000/local-run1-0/00000.jsonl.out",
    ]
    assert store.keys("reembed/run1") == store.keys("reembed/run1/") + ["reembed/run10/input/00000.jsonl"]
    assert store.keys("reembed/absent/") == []
    with pytest.raises(FileNotFoundError):
        store.get_text("reembed/none.jsonl")


def test_local_store_write_that_fails_midway_leaves_nothing_behind(tmp_path: Path) -> None:
    store = LocalManifestStore(tmp_path)

    def lines_then_failure() -> Iterator[str]:
        yield "first"
        raise RuntimeError("the model failed")

    with pytest.raises(RuntimeError):
        store.put_lines("reembed/run1/output/a.jsonl.out", lines_then_failure())
    assert store.keys("reembed/") == []
    assert list((tmp_path / "reembed/run1/output").iterdir()) == []


def test_local_store_refuses_keys_outside_its_root(tmp_path: Path) -> None:
    store = LocalManifestStore(tmp_path / "root")
    for key in ("../escape.jsonl", "/etc/passwd", ""):
        with pytest.raises(ValueError, match="not a relative key"):
            store.put_text(key, "x")
