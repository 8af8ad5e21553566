"""A small corpus for the query API, ingested through the real ingest path (moto S3, local model)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from rag_local.api_server import http_api_event
from rag_local.lambdas import LocalContext, load_handler_module

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "transcripts"
BUCKET = "api-test"


@pytest.fixture(scope="module")
def corpus(database_url, local_embedder) -> dict[str, str]:
    """Examples for tenant 'acme' (project 'remote') and one meeting for tenant 'globex'.

    Returns ``projects/remote/<file>`` (the key under ``tenants/<tenant>/``) -> document id.
    """
    from rag.aws import _client
    from rag.config import get_settings
    from rag.events import ObjectChange
    from rag.ingest import build_ingestor
    from rag.store.connection import connect

    with connect(database_url) as conn:
        conn.execute("TRUNCATE documents CASCADE; TRUNCATE keyword_stats, query_log")
    ids = {}
    with mock_aws():
        _client.cache_clear()
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        # The tenant is the key's: tenants/<tenant>/projects/<project>/...
        uploads = [(f"tenants/acme/projects/remote/{p.name}", p.read_bytes()) for p in sorted(EXAMPLES.iterdir())]
        uploads.append(
            (
                "tenants/globex/projects/remote/globex-secret.txt",
                b"Zed: The globex zanzibar budget is secret.\nYves: Agreed, zanzibar stays internal.",
            )
        )
        for key, data in uploads:
            s3.put_object(Bucket=BUCKET, Key=key, Body=data)
        ingestor = build_ingestor(get_settings())
        for key, _ in uploads:
            result = ingestor.apply(ObjectChange("created", BUCKET, key))
            assert result.outcome == "ingested", result
            ids[key.split("/", 2)[2]] = result.document_id  # keyed by the path under the tenant's prefix
        _client.cache_clear()
    return ids


@pytest.fixture
def closed_database_url() -> Any:
    """A database URL whose port is bound and never listens: every connection is refused."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"postgresql://postgres@127.0.0.1:{sock.getsockname()[1]}/rag"


def call(
    method: str,
    path: str,
    body: Any = None,
    *,
    tenant: str | None = "acme",
    content_type: str = "application/json",
    raw: bytes | None = None,
) -> tuple[int, dict]:
    handler = load_handler_module("query").lambda_handler
    payload = raw if raw is not None else (json.dumps(body).encode() if body is not None else b"")
    event = http_api_event(method, path, {"Content-Type": content_type}, payload, tenant, "test-key")
    response = handler(event, LocalContext(function_name="query"))
    return int(response["statusCode"]), json.loads(response["body"] or "{}")


@pytest.fixture(scope="module")
def knowledge(corpus, database_url, local_embedder) -> dict[str, int]:
    """What the backfill would extract from the corpus (tests/search/knowledge_rows.py), for both tenants; text -> id.

    Acme also gets a second project, "other", with one meeting about the charging dock.
    """
    from datetime import date

    from rag.store.connection import connect
    from tests.search.knowledge_rows import GLOBEX_ITEMS, REMOTE_ITEMS, insert_document, insert_items

    with connect(database_url) as conn:
        dock = insert_document(conn, "acme", "other", "projects/other/2026-11-04-dock.txt", meeting_date=date(2026, 11, 4))
        documents = {
            "review": (corpus["projects/remote/2026-11-02-battery-review.txt"], "acme", "remote"),
            "standup": (corpus["projects/remote/2026-11-09-launch-standup.vtt"], "acme", "remote"),
            "dock": (dock, "acme", "other"),
            "secret": (corpus["projects/remote/globex-secret.txt"], "globex", "remote"),
        }
        return insert_items(conn, local_embedder, documents, REMOTE_ITEMS + GLOBEX_ITEMS)
