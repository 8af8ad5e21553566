"""Speakers through ingest and the query API: labels kept as written, filtered by the person's folded name."""

from __future__ import annotations

import json

import pytest

from rag_local.api_server import http_api_event
from rag_local.lambdas import LocalContext, load_handler_module
from tests.ingest.events import s3_notification, sqs_batch

BUCKET = "rag-test-bucket"
MEETINGS = {
    "projects/acme/meetings/2026-11-02-battery.txt": (
        "Sofia Ruiz (PM): We ship the rechargeable battery in March.\n"
        "Dana Kim: The charger failed the drop test twice.\n"
        "SOFIA RUIZ: Then we retest the battery charger next week.\n"
    ),
    "projects/acme/meetings/2026-11-09-battery.txt": (
        "Priya: The battery supplier confirmed the price.\nRavi: The battery logo goes on the lid.\n"
    ),
}

pytestmark = pytest.mark.slow


@pytest.fixture
def ingested(s3, db, local_embedder):
    from rag.aws import _client

    _client.cache_clear()  # boto3 clients must be created inside mock_aws
    for key, text in MEETINGS.items():
        s3.put_object(Bucket=BUCKET, Key=key, Body=text.encode())
    handler = load_handler_module("ingest").lambda_handler
    event = sqs_batch(*(json.dumps(s3_notification(BUCKET, key)) for key in MEETINGS))
    assert handler(event, LocalContext(function_name="ingest")) == {"batchItemFailures": []}
    return db


def search(body: dict) -> list[dict]:
    handler = load_handler_module("query").lambda_handler
    event = http_api_event("POST", "/v1/search", {"Content-Type": "application/json"}, json.dumps(body).encode(),
                           "default", "test-key")  # fmt: skip
    response = handler(event, LocalContext(function_name="query"))
    assert response["statusCode"] == 200, response["body"]
    return list(json.loads(response["body"])["results"])


def test_ingest_stores_the_labels_as_written_and_one_key_per_person(ingested):
    rows = ingested.execute(
        "SELECT d.object_key, c.speakers, c.speaker_keys FROM chunks c JOIN documents d ON d.id = c.document_id"
        " ORDER BY d.object_key, c.chunk_index"
    ).fetchall()
    assert rows == [
        ("projects/acme/meetings/2026-11-02-battery.txt", ["Sofia Ruiz (PM)", "Dana Kim", "SOFIA RUIZ"],
         ["dana kim", "sofia ruiz"]),
        ("projects/acme/meetings/2026-11-09-battery.txt", ["Priya", "Ravi"], ["priya", "ravi"]),
    ]  # fmt: skip
    people = ingested.execute("SELECT speaker_keys FROM documents ORDER BY object_key").fetchall()
    assert people == [(["dana kim", "sofia ruiz"],), (["priya", "ravi"],)]


@pytest.mark.parametrize("name", ["sofia ruiz", "SOFIA RUIZ", "Sofia Ruiz (PM)"])
def test_the_search_api_filters_by_the_folded_name_and_shows_the_labels(ingested, name):
    results = search({"query": "battery", "filters": {"speakers": [name]}, "mode": "keyword", "top_k": 10})
    assert [(r["source"]["uri"].rsplit("/", 1)[1], r["speakers"]) for r in results] == [
        ("2026-11-02-battery.txt", ["Sofia Ruiz (PM)", "Dana Kim", "SOFIA RUIZ"])
    ]
