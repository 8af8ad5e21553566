"""Many chat clients at once, while transcripts are ingested: no 5xx, no hang, no tenant mix-up.

Real HTTP through the local server (``rag serve``'s), the real query handler, real PostgreSQL. The local server
runs the handler as one warm Lambda container does, one event at a time (rag_local.lambdas: Powertools' resolver
keeps the current event in class state), so what this checks is the HTTP side under 20 clients at once (requests
queue and are all answered, each with its own tenant's results, while an ingest writes beside them), not two
searches executing in parallel; in AWS, parallel requests run in separate containers with their own connections.
"""

from __future__ import annotations

import json
import socket
import threading
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import boto3
import pytest
from moto import mock_aws

pytestmark = pytest.mark.slow

CLIENTS = 20
SEARCHES_PER_CLIENT = 5


@pytest.fixture(scope="module")
def base_url(corpus) -> Iterator[str]:
    from rag.config import get_settings
    from rag_local.api_server import make_server

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = make_server(get_settings().with_values(api_keys="acme-key=acme,globex-key=globex"), port)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{port}"
    server.shutdown()
    server.server_close()


def search(base_url: str, key: str, query: str) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"{base_url}/v1/search",
        data=json.dumps({"query": query, "top_k": 5}).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def ingest_meetings(count: int) -> list[str]:
    """What the queue worker does beside the API: ingest new transcripts for acme."""
    from rag.aws import _client
    from rag.config import get_settings
    from rag.events import ObjectChange
    from rag.ingest import build_ingestor

    outcomes = []
    with mock_aws():
        _client.cache_clear()
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="concurrency")
        ingestor = build_ingestor(get_settings())
        for i in range(count):
            key = f"tenants/acme/projects/live/meeting-{i}.txt"
            body = f"Maya: Item {i}: the battery supplier confirmed delivery.\nJonas: Noted for week {i}."
            s3.put_object(Bucket="concurrency", Key=key, Body=body.encode())
            outcomes.append(ingestor.apply(ObjectChange("created", "concurrency", key)).outcome)
        _client.cache_clear()
    return outcomes


def test_parallel_clients_during_an_ingest_all_get_answers_of_their_own_tenant(base_url, corpus, database_url):
    import psycopg

    globex_doc = corpus["projects/remote/globex-secret.txt"]

    def client(n: int) -> list[tuple[str, int, dict]]:
        key = "globex-key" if n % 4 == 0 else "acme-key"
        return [(key, *search(base_url, key, f"zanzibar battery budget {n} {i}")) for i in range(SEARCHES_PER_CLIENT)]

    with ThreadPoolExecutor(CLIENTS + 1) as pool:
        ingest = pool.submit(ingest_meetings, 10)
        answers = [answer for future in [pool.submit(client, n) for n in range(CLIENTS)] for answer in future.result(timeout=300)]
        outcomes = ingest.result(timeout=300)

    assert [status for _, status, _ in answers] == [200] * CLIENTS * SEARCHES_PER_CLIENT
    for key, _, body in answers:
        documents = {hit["document_id"] for hit in body["results"]}
        assert (documents <= {globex_doc}) if key == "globex-key" else (globex_doc not in documents)
    assert outcomes == ["ingested"] * 10
    with psycopg.connect(database_url, autocommit=True) as admin:
        committed = admin.execute(
            "SELECT count(*) FROM documents WHERE project_id = 'live' AND status = 'raw_ingested'"
        ).fetchone()
        stuck = admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'"
        ).fetchone()
    assert committed == (10,) and stuck == (0,)
