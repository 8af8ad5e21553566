"""Every flow of a deployed stack, run by the artifacts that ship: the layer and the function assets as the CDK app
builds them, on CPython 3.12 with nothing else on the path but the runtime's boto3 (tests/artifact/harness.py).

In order, as a first deploy goes: the migrator creates the schema (and updates, and builds a deferred index);
S3 notifications reach the ingest function through SQS; the backfill's three stages run; then the query API
answers search in every mode and type, /v1/context, /v1/ask (extractive, an OpenAI-compatible model, Bedrock) and
MCP, as API Gateway calls it. Real PostgreSQL, moto, and model endpoints speaking the providers' wire formats.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.artifact.harness import (
    OPENAI_KEY,
    Invocation,
    LambdaProcess,
    Stack,
    cloudformation_event,
    http_event,
    load_event,
    mcp_event,
    migration_properties,
    receive_all,
    sqs_event,
)

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = REPO_ROOT / "examples" / "transcripts"
BACKFILL_FIXTURES = REPO_ROOT / "tests" / "fixtures" / "backfill"
ASK_FIXTURES = REPO_ROOT / "tests" / "fixtures" / "ask"

# The first batch: acme's meetings (the examples and the recorded scanner-rollout sync), one default-tenant note.
FIRST_BATCH = {
    "tenants/acme/projects/remote/2026-11-02-battery-review.txt": EXAMPLES / "2026-11-02-battery-review.txt",
    "tenants/acme/projects/remote/2026-11-09-launch-standup.vtt": EXAMPLES / "2026-11-09-launch-standup.vtt",
    "tenants/acme/projects/remote/remote-control-spec.md": EXAMPLES / "remote-control-spec.md",
    "tenants/acme/projects/warehouse/2026-11-10-scanner-rollout-sync.txt": BACKFILL_FIXTURES
    / "transcripts"
    / "scanner_rollout_sync.txt",
    "projects/remote/obsolete-notes.txt": BACKFILL_FIXTURES / "transcripts" / "budget_review.txt",
}
# The second: another tenant's meeting, a file that can never be ingested, and the note deleted.
GLOBEX_MEETING = "tenants/globex/projects/finance/2026-11-12-budget-review.txt"
UNREADABLE = "tenants/acme/projects/remote/whiteboard-photo.txt"
DELETED = "projects/remote/obsolete-notes.txt"
# The fakes' vectors are random (a hash of the text): few passages reach /v1/ask's and MCP's evidence floor, so
# the query function runs with none (everything else as deployed).
ANY_SIMILARITY = {"RAG_ASK_MIN_EVIDENCE": "-1"}
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00\x00\x00\x01\x00\x08\x02\x00\x00\x00"


def documents(stack: Stack) -> dict[str, tuple[str, str | None, int]]:
    """object key -> (status, error, chunk count)."""
    rows = stack.services.database.execute(
        "SELECT d.object_key, d.status, d.error, count(c.*) FROM documents d LEFT JOIN chunks c ON c.document_id = d.id"
        " GROUP BY d.object_key, d.status, d.error"
    )
    return {key: (status, error, chunks) for key, status, error, chunks in rows}


# --- deploy: the migrator ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def migrations(stack: Stack) -> dict[str, Invocation]:
    """The custom resource's Create, then an Update with the same properties, then build-indexes for a dropped index."""
    properties = migration_properties(stack)
    with stack.function("migrate") as migrate:
        created = migrate.invoke(cloudformation_event("Create", properties))
        updated = migrate.invoke(cloudformation_event("Update", properties, old=properties))
        index = chunk_index(stack)
        stack.services.database.execute(f'DROP INDEX "{index}"')  # as if deferred: too many rows for a deploy
        built = migrate.invoke({"action": "build-indexes"})
    return {"create": created, "update": updated, "build-indexes": built}


def chunk_index(stack: Stack) -> str:
    [(name,)] = stack.services.database.execute(
        "SELECT indexname FROM pg_indexes WHERE tablename = 'chunks' AND indexdef LIKE '%USING hnsw%'"
    )
    return str(name)


def test_the_migrator_creates_the_schema_and_the_functions_role(stack: Stack, migrations: dict[str, Invocation]) -> None:
    versions = sorted(p.name.split("_")[0] for p in (REPO_ROOT / "sql").glob("*.sql"))
    assert migrations["create"].value() == {"PhysicalResourceId": "meeting-rag-schema", "Data": {"Applied": ",".join(versions)}}
    database = stack.services.database
    [(can_write, can_alter)] = database.execute(
        "SELECT has_table_privilege(%s, 'chunks', 'INSERT'), has_database_privilege(%s, current_database(), 'CREATE')",
        (database.app_user, database.app_user),
    )
    assert (can_write, can_alter) == (True, False)


def test_an_update_with_nothing_new_applies_nothing(migrations: dict[str, Invocation]) -> None:
    assert migrations["update"].value() == {"PhysicalResourceId": "meeting-rag-schema", "Data": {"Applied": "none"}}


def test_build_indexes_builds_the_missing_vector_index(stack: Stack, migrations: dict[str, Invocation]) -> None:
    from rag.store.migrations import embedding_index_name

    properties = stack.artifacts.resource_properties("Custom::MeetingRagMigrations")  # the configured model
    expected = embedding_index_name("chunks", properties["EmbeddingModel"], int(properties["EmbeddingDimension"]))
    assert migrations["build-indexes"].value() == {"built": [expected]}
    assert chunk_index(stack) == expected


# --- ingest: S3 -> SQS -> the ingest function ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ingest(stack: Stack, migrations: dict[str, Invocation]) -> dict[str, Any]:
    services = stack.services
    s3 = services.client("s3")
    for key, path in FIRST_BATCH.items():
        s3.put_object(Bucket=services.bucket, Key=key, Body=path.read_bytes())
    # S3 sends a test event when the notification is configured, then one notification per object.
    first = sqs_event(receive_all(services, len(FIRST_BATCH) + 1), services.queue_arn)
    with stack.function("ingest") as function:
        first_result = function.invoke(first)
        after_first = documents(stack)
        executions = services.client("stepfunctions").list_executions(stateMachineArn=services.state_machine_arn)
        s3.put_object(
            Bucket=services.bucket,
            Key=GLOBEX_MEETING,
            Body=(BACKFILL_FIXTURES / "transcripts" / "budget_review.txt").read_bytes(),
        )
        s3.put_object(Bucket=services.bucket, Key=UNREADABLE, Body=PNG)
        s3.delete_object(Bucket=services.bucket, Key=DELETED)  # a delete marker: the bucket is versioned
        services.client("sqs").send_message(
            QueueUrl=services.queue_url, MessageBody=json.dumps(delete_marker_created(services.bucket, DELETED))
        )
        second = sqs_event(receive_all(services, 3), services.queue_arn)
        second_result = function.invoke(second)
    return {
        "first": first_result, "after_first": after_first, "executions": executions["executions"],
        "second": second_result, "second_event": second,
    }  # fmt: skip


def delete_marker_created(bucket: str, key: str) -> dict[str, Any]:
    """S3's notification for a delete on a versioned bucket (moto sends none for a delete marker)."""
    from urllib.parse import quote_plus

    event = load_event("s3_object_removed.json")
    record = event["Records"][0]
    record["eventName"] = "ObjectRemoved:DeleteMarkerCreated"
    record["s3"]["bucket"].update(name=bucket, arn=f"arn:aws:s3:::{bucket}")
    record["s3"]["object"]["key"] = quote_plus(key)
    return event


def test_a_batch_of_s3_notifications_is_ingested(stack: Stack, ingest: dict[str, Any]) -> None:
    assert ingest["first"].value() == {"batchItemFailures": []}
    ingested = ingest["after_first"]
    assert set(ingested) == set(FIRST_BATCH)
    assert {status for status, _, _ in ingested.values()} == {"raw_ingested"}
    assert all(chunks > 0 for _, _, chunks in ingested.values())
    embeddings = [r for r in stack.services.model.requests if r["path"] == "/v1/embeddings"]
    assert embeddings and {r["auth"] for r in embeddings} == {f"Bearer {OPENAI_KEY}"}  # the key from Secrets Manager
    assert {r["body"]["model"] for r in embeddings} == {"text-embedding-3-small"}


def test_the_ingest_function_starts_the_backfill_once_it_stored_documents(stack: Stack, ingest: dict[str, Any]) -> None:
    [execution] = ingest["executions"]  # started by the function with the template's input, through the layer's code
    assert execution["status"] == "RUNNING" and execution["name"].startswith("after-ingest-")
    described = stack.services.client("stepfunctions").describe_execution(executionArn=execution["executionArn"])
    ingest_env = stack.artifacts.functions["ingest"].environment
    assert json.loads(described["input"]) == json.loads(ingest_env["RAG_BACKFILL_EXECUTION_INPUT"])
    assert set(json.loads(described["input"])) == {"stages", "batch_size", "max_iterations"}


def test_a_batch_with_a_new_meeting_an_unreadable_file_and_a_delete(stack: Stack, ingest: dict[str, Any]) -> None:
    assert ingest["second"].value() == {"batchItemFailures": []}  # the unreadable file is a failed row, not a retry
    now = documents(stack)
    assert DELETED not in now
    assert now[GLOBEX_MEETING][0] == "raw_ingested" and now[GLOBEX_MEETING][2] > 0
    status, error, chunks = now[UNREADABLE]
    assert (status, chunks) == ("failed", 0)
    assert error == "whiteboard-photo.txt: an image (PNG); run OCR on it first and upload the text"  # told by its bytes


# --- the backfill state machine's three stages ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def backfill(stack: Stack, ingest: dict[str, Any]) -> dict[str, list[Invocation]]:
    """Each stage's function called as the state machine calls it: from zeroed progress until nothing remains."""
    from infra.constructs.backfill_state_machine import PROGRESS_FIELDS

    runs: dict[str, list[Invocation]] = {}
    for stage in ("segment", "embed", "extract"):
        with stack.function(f"backfill-{stage}") as function:
            previous = dict.fromkeys(PROGRESS_FIELDS, 0)
            runs[stage] = []
            for _ in range(5):  # the machine's loop, bounded
                invocation = function.invoke({"stage": stage, "batch_size": 10, "previous": previous})
                runs[stage].append(invocation)
                previous = invocation.value()
                if previous["remaining"] <= 0:
                    break
    return runs


def test_the_backfill_stages_move_every_ingested_document_through(stack: Stack, backfill: dict[str, list[Invocation]]) -> None:
    ingested = 5  # four of acme's meetings and globex's (the deleted note is gone, the photo failed)
    for stage, invocations in backfill.items():
        last = invocations[-1].value()
        assert (last["processed_total"], last["failed_total"], last["remaining"]) == (ingested, 0, 0), stage
    statuses = stack.services.database.execute("SELECT status, count(*) FROM documents GROUP BY status")
    assert dict(statuses) == {"extracted": ingested, "failed": 1}


def test_the_backfill_writes_what_the_model_extracted(stack: Stack, backfill: dict[str, list[Invocation]]) -> None:
    database = stack.services.database
    segments = database.execute(
        "SELECT s.title, s.embedding IS NOT NULL FROM segments s JOIN documents d ON d.id = s.document_id"
        " WHERE d.object_key LIKE %s ORDER BY s.segment_index",
        ("%scanner-rollout-sync.txt",),
    )
    assert segments == [("Leeds warehouse scanner rollout", True), ("Rotterdam trade show booth", True)]
    counts = {
        table: database.execute(f"SELECT count(*) FROM {table}")[0][0]
        for table in ("decisions", "risks", "opportunities", "tasks")
    }
    assert counts == {"decisions": 2, "risks": 2, "opportunities": 1, "tasks": 3}
    structured = [r for r in stack.services.model.requests if r["path"] == "/v1/chat/completions"]
    assert {r["body"]["response_format"]["json_schema"]["name"] for r in structured} == {
        "ProposedSegmentation",
        "ProposedKnowledge",
    }


# --- the query API, as API Gateway calls it ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def query(stack: Stack, backfill: dict[str, list[Invocation]]) -> Any:
    with stack.function("query", environment=ANY_SIMILARITY) as function:
        yield function


def call(function: LambdaProcess, method: str, path: str, body: Any = None, **kwargs: Any) -> tuple[int, Any]:
    response = function.invoke(http_event(method, path, body, **kwargs)).value()
    assert response["headers"]["Content-Type"].startswith("application/json"), response
    return response["statusCode"], json.loads(response["body"] or "null")


# One query per kind that its items' words match (keyword mode finds them); semantic mode ranks by the fake's vectors.
SEARCHES = {
    "chunk": ("battery", "battery"),
    "segment": ("Rotterdam trade show booth", "rotterdam"),
    "decision": ("flash firmware scanner", "firmware"),
    "risk": ("firmware upgrade bricks scanners", "brick"),
    "opportunity": ("logistics distributors demos", "distributors"),
    "task": ("brochure artwork printer", "artwork"),
}


@pytest.mark.parametrize("mode", ["semantic", "keyword", "hybrid"])
@pytest.mark.parametrize("kind", list(SEARCHES))
def test_search_in_every_mode_and_type(query: LambdaProcess, mode: str, kind: str) -> None:
    text, word = SEARCHES[kind]
    # threshold -1: the fake's vectors are random, so any similarity counts (semantic results are then every item)
    status, body = call(query, "POST", "/v1/search", {"query": text, "mode": mode, "types": [kind], "top_k": 5, "threshold": -1})
    assert status == 200, body
    results = body["results"]
    assert results and {r["type"] for r in results} == {kind}
    assert all("globex" not in r["source"]["uri"] for r in results)  # acme's only
    if mode == "keyword":
        assert word in results[0]["content"].lower() or word in json.dumps(results[0]["metadata"]).lower()
    if mode != "keyword":
        assert all(-1 <= r["similarity"] <= 1 for r in results)


def test_search_sees_the_callers_tenant_only(query: LambdaProcess) -> None:
    status, body = call(query, "POST", "/v1/search", {"query": "budget review", "top_k": 20, "threshold": -1}, tenant="globex")
    assert status == 200
    assert body["results"] and {r["source"]["uri"].split("/", 3)[3] for r in body["results"]} == {GLOBEX_MEETING}


def test_context_numbers_its_passages(query: LambdaProcess) -> None:
    status, body = call(query, "POST", "/v1/context", {"query": "battery decision", "max_tokens": 400, "threshold": -1})
    assert status == 200, body
    assert body["results"] and body["context"].startswith("[1]")
    assert len(body["results"]) == body["context"].count("\n[") + 1


def test_catalog_routes(query: LambdaProcess, ingest: dict[str, Any]) -> None:
    status, body = call(query, "GET", "/v1/projects")
    assert status == 200 and sorted(p["id"] for p in body["projects"]) == ["remote", "warehouse"]
    status, body = call(query, "GET", "/v1/meetings", query={"project_id": "warehouse"})
    assert status == 200 and [m["title"] for m in body["meetings"]] == ["2026-11-10-scanner-rollout-sync"]
    document_id = body["meetings"][0]["document_id"]
    status, body = call(query, "GET", f"/v1/documents/{document_id}")
    assert status == 200 and (body["status"], body["project_id"]) == ("extracted", "warehouse")
    status, body = call(query, "GET", "/v1/tasks", query={"project_id": "warehouse"})
    assert status == 200 and {t["assignee"] for t in body["tasks"]} == {"Tom", "Aisha"}
    status, body = call(query, "GET", "/v1/projects/warehouse/changes", query={"since": "2026-11-01"})
    assert status == 200 and {t["assignee"] for t in body["tasks_assigned"]} == {"Tom", "Aisha"}
    assert {t["meeting_date"] for t in body["tasks_assigned"]} == {"2026-11-10"}
    status, body = call(query, "GET", "/v1/projects/warehouse/brief", query={"days": "366"})
    assert status == 200 and {g["owner"] for g in body["tasks_by_owner"]} <= {"Tom", "Aisha"}
    status, body = call(query, "GET", "/v1/openapi.json")
    assert status == 200 and "/v1/search" in body["paths"]
    status, body = call(query, "GET", "/v1/tools")
    assert status == 200 and [t["name"] for t in body["anthropic"]][0] == "search"


def page_event(path: str) -> dict[str, Any]:
    """A GET of the page's routes, which have no authorizer: no identity in the event."""
    event = http_event("GET", path)
    route = "/assets/{proxy+}" if path.startswith("/assets/") else path
    event["routeKey"] = event["requestContext"]["routeKey"] = f"GET {route}"
    event["requestContext"].pop("authorizer")
    event["pathParameters"] = {"proxy": path.removeprefix("/assets/")} if route != path else {}
    return event


def test_the_page_its_content_and_an_upload(stack: Stack, query: LambdaProcess, ingest: dict[str, Any]) -> None:
    """The page's files ship in the layer and are served with their hashed names; the meeting view's content and the
    upload ticket work from the layer (the PUT lands in the documents bucket at the caller's key)."""
    import re

    import requests

    page = query.invoke(page_event("/")).value()
    assert page["statusCode"] == 200 and page["headers"]["Content-Type"] == "text/html; charset=utf-8"
    assert f"connect-src 'self' {stack.services.moto_url}" in page["headers"]["Content-Security-Policy"]
    script = re.search(r'src="(/assets/app\.[0-9a-f]{12}\.js)"', page["body"])
    assert script, page["body"]
    asset = query.invoke(page_event(script.group(1))).value()
    assert asset["statusCode"] == 200 and asset["headers"]["Cache-Control"] == "public, max-age=31536000, immutable"
    health = query.invoke(page_event("/health")).value()
    assert (health["statusCode"], json.loads(health["body"])["database"]) == (200, "ok")
    assert json.loads(query.invoke(page_event("/config.json")).value()["body"])["upload"] is True
    status, listed = call(query, "GET", "/v1/documents", query={"project_id": "warehouse"})
    assert status == 200 and listed["counts"]["extracted"] == 1
    status, content = call(query, "GET", f"/v1/documents/{listed['documents'][0]['document_id']}/content")
    assert status == 200 and content["turns"] and content["items"] and content["text"]
    status, ticket = call(query, "POST", "/v1/uploads", {"project_id": "remote", "filename": "uploaded notes.txt"})
    assert status == 201 and ticket["key"] == "tenants/acme/projects/remote/uploaded notes.txt"
    put = requests.put(ticket["url"], data=b"Maya: uploaded from the page.", headers=ticket["headers"], timeout=30)
    assert put.status_code == 200, put.text
    stored = stack.services.client("s3").get_object(Bucket=stack.services.bucket, Key=ticket["key"])
    assert stored["Body"].read() == b"Maya: uploaded from the page."


def test_search_reads_through_a_reader_endpoint(stack: Stack, backfill: dict[str, list[Invocation]]) -> None:
    """RAG_DATABASE_READER_HOST as the Aurora stage sets it: the writer's IAM URL with the reader's host (here the same
    server, a primary: lag 0), an IAM token signed for it, and a pool of its own that serves the search."""
    import psycopg

    host = stack.services.database.params.get("host", "127.0.0.1")
    with stack.function(
        "query", environment={"RAG_DATABASE_READER_HOST": host, **ANY_SIMILARITY}, label="query-reader"
    ) as function:
        status, body = call(function, "POST", "/v1/search", {"query": "battery", "mode": "keyword", "top_k": 3})
        assert status == 200 and body["results"], body
        with psycopg.connect(stack.services.database.server_url, autocommit=True) as admin:
            readers = admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND application_name = 'meeting-rag-reader'",
                (stack.services.database.name,),
            ).fetchone()
    assert readers is not None and readers[0] == 1  # the warm function's reader connection, kept for the next search


def test_ask_with_the_openai_compatible_model(stack: Stack, query: LambdaProcess) -> None:
    from tests.embedding.fake_openai import Assistant

    stack.services.model.chat_responses += Assistant.load(ASK_FIXTURES / "battery_decision.json")
    status, body = call(
        query, "POST", "/v1/ask", {"question": "What did we decide about the battery?", "project_ids": ["remote"]}
    )
    assert status == 200, body
    assert body["mode"] == "llm" and body["degraded"] is None
    assert body["answer"].startswith("The team decided on a rechargeable battery")
    assert [c["n"] for c in body["citations"]] and {c["n"] for c in body["citations"]} <= {1, 2}
    assert [(t["name"], t["result_count"] > 0) for t in body["tool_calls"]] == [("search", True)]
    assert not stack.services.model.chat_responses  # both recorded turns were asked for


def test_mcp_over_http(query: LambdaProcess) -> None:
    def post(message: dict[str, Any], version: str | None = None) -> tuple[int, Any]:
        response = query.invoke(mcp_event(message, protocol_version=version)).value()
        return response["statusCode"], json.loads(response["body"]) if response.get("body") else None

    status, initialized = post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "artifact-test", "version": "1"}}})  # fmt: skip
    assert status == 200, initialized
    version = initialized["result"]["protocolVersion"]
    assert initialized["result"]["serverInfo"]["name"] == "meeting-rag"
    assert post({"jsonrpc": "2.0", "method": "notifications/initialized"}, version)[0] == 202
    status, listed = post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, version)
    assert status == 200 and "search" in [t["name"] for t in listed["result"]["tools"]]
    status, called = post({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                           "params": {"name": "search", "arguments": {"query": "firmware scanners", "top_k": 3}}}, version)  # fmt: skip
    assert status == 200, called
    result = called["result"]
    assert result["isError"] is False and result["structuredContent"]["results"]
    assert result["structuredContent"]["results"][0]["cite_as"] == "[1]"


def traced(stack: Stack, invocation: Invocation) -> set[tuple[str, str | None]]:
    """(name, namespace) of the (sub)segments the function sent the X-Ray daemon during ``invocation``."""
    return {(s["name"], s.get("namespace")) for s in stack.services.xray.segments_of(invocation.trace_root)}


def test_invocations_are_traced_with_their_aws_calls(stack: Stack, ingest: dict[str, Any], query: LambdaProcess) -> None:
    assert {("## lambda_handler", "local"), ("s3", "aws")} <= traced(stack, ingest["second"])  # botocore is traced
    invocation = query.invoke(http_event("GET", "/v1/projects"))
    assert invocation.value()["statusCode"] == 200
    assert ("## lambda_handler", "local") in traced(stack, invocation)


def test_ask_extractive(stack: Stack, backfill: dict[str, list[Invocation]]) -> None:
    # Without a model: RAG_LLM_PROVIDER=none, the dev stage's choice.
    with stack.function(
        "query", environment={"RAG_LLM_PROVIDER": "none", **ANY_SIMILARITY}, label="query-extractive"
    ) as function:
        status, body = call(
            function, "POST", "/v1/ask", {"question": "What did we decide about the battery?", "project_ids": ["remote"]}
        )
    assert status == 200, body
    assert body["mode"] == "extractive" and body["tool_calls"] == []
    assert body["citations"] and "[1]" in body["answer"]


def test_ask_with_bedrock(stack: Stack, backfill: dict[str, list[Invocation]]) -> None:
    bedrock = stack.services.bedrock
    model = "anthropic.claude-3-5-haiku-20241022-v1:0"
    tool_use = {"toolUseId": "tu-1", "name": "search", "input": {"query": "battery decision", "top_k": 2}}
    usage = {"inputTokens": 120, "outputTokens": 30, "totalTokens": 150}
    bedrock.converse_responses += [
        {"output": {"message": {"role": "assistant", "content": [{"text": "Searching."}, {"toolUse": tool_use}]}},
         "stopReason": "tool_use", "usage": usage, "metrics": {"latencyMs": 10}},
        {"output": {"message": {"role": "assistant", "content": [{"text": "Rechargeable with USB-C [1]."}]}},
         "stopReason": "end_turn", "usage": usage, "metrics": {"latencyMs": 10}},
    ]  # fmt: skip
    environment = {"RAG_LLM_PROVIDER": "bedrock", "RAG_BEDROCK_CHAT_MODEL": model, **ANY_SIMILARITY}
    with stack.function("query", environment=environment, label="query-bedrock") as function:
        status, body = call(
            function, "POST", "/v1/ask", {"question": "What did we decide about the battery?", "project_ids": ["remote"]}
        )
    assert status == 200, body
    assert (body["mode"], body["answer"], body["degraded"]) == ("llm", "Rechargeable with USB-C [1].", None)
    assert [c["n"] for c in body["citations"]] == [1]
    assert body["tool_calls"] == [
        {"name": "search", "arguments": {"query": "battery decision", "top_k": 2}, "result_count": 2, "error": None}
    ]
    assert [(r["model"], r["operation"]) for r in bedrock.requests] == [(model, "converse")] * 2
    assert all(r["auth"].startswith("AWS4-HMAC-SHA256 Credential=ASIAARTIFACTTEST/") for r in bedrock.requests)


def test_search_reranked_by_bedrock_and_the_fused_order_when_its_reply_is_broken_or_throttled(
    stack: Stack, query: LambdaProcess
) -> None:
    bedrock = stack.services.bedrock
    question = {"query": "battery", "mode": "keyword", "project_ids": ["remote"], "top_k": 3}
    fused = call(query, "POST", "/v1/search", question)  # the deployed query function: no reranker
    environment = {
        "RAG_RERANKER": "bedrock", "RAG_RERANK_CANDIDATES": "3", "RAG_BEDROCK_RERANK_MODEL": "amazon.rerank-v1:0",
        "AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME": bedrock.url,
    }  # fmt: skip
    bedrock.rerank_responses += [
        (200, b"<html>upstream proxy error</html>", None),  # a body that is not a Rerank response
        {
            "results": [
                {"index": 2, "relevanceScore": 0.93},
                {"index": 1, "relevanceScore": 0.5},
                {"index": 0, "relevanceScore": 0.01},
            ]
        },
        (429, b'{"message": "Too many requests"}', "ThrottlingException"),  # the first attempt ...
        (429, b'{"message": "Too many requests"}', "ThrottlingException"),  # ... and botocore's one retry
    ]
    with stack.function("query", environment=environment, label="query-rerank") as function:
        broken = call(function, "POST", "/v1/search", question)
        reranked = call(function, "POST", "/v1/search", question)
        throttled = call(function, "POST", "/v1/search", question)

    assert fused[0] == broken[0] == reranked[0] == throttled[0] == 200
    fused_ids = [r["id"] for r in fused[1]["results"]]
    assert len(fused_ids) == 3
    assert [r["id"] for r in broken[1]["results"]] == fused_ids
    assert [r["id"] for r in reranked[1]["results"]] == fused_ids[::-1]
    assert [r["score"] for r in reranked[1]["results"]] == [0.93, 0.5, 0.01]
    assert [r["id"] for r in throttled[1]["results"]] == fused_ids
    requests = [r for r in bedrock.requests if r["operation"] == "rerank"]
    assert len(requests) == 4 and not bedrock.rerank_responses
    body = requests[1]["body"]
    assert body["queries"] == [{"type": "TEXT", "textQuery": {"text": "battery"}}]
    assert body["rerankingConfiguration"] == {
        "type": "BEDROCK_RERANKING_MODEL",
        "bedrockRerankingConfiguration": {
            "modelConfiguration": {"modelArn": "arn:aws:bedrock:us-east-1::foundation-model/amazon.rerank-v1:0"},
            "numberOfResults": 3,
        },
    }
    assert [s["inlineDocumentSource"]["textDocument"]["text"] for s in body["sources"]] == [
        r["content"][:1500] for r in fused[1]["results"]
    ]
    # Signed for IAM's bedrock service (bedrock:Rerank), with the function's credentials.
    assert all("/us-east-1/bedrock/aws4_request" in r["auth"] for r in requests)


def test_the_backfill_with_bedrock_segments_and_extracts_through_converse(
    stack: Stack, backfill: dict[str, list[Invocation]]
) -> None:
    """A stage with llm provider bedrock: its Converse calls go out signed, its answers land as the OpenAI path's did."""
    from tests.artifact.scripted_model import converse_answer

    database, bedrock = stack.services.database, stack.services.bedrock
    scanner = ("%scanner-rollout-sync.txt",)
    before = {table: database.execute(f"SELECT count(*) FROM {table}")[0][0] for table in ("decisions", "tasks")}
    database.execute("UPDATE documents SET status = 'raw_ingested' WHERE object_key LIKE %s", scanner)
    bedrock.requests.clear()
    bedrock.converse_responder = converse_answer
    model = "anthropic.claude-3-5-haiku-20241022-v1:0"
    try:
        for stage in ("segment", "embed", "extract"):
            environment = {"RAG_LLM_PROVIDER": "bedrock", "RAG_BEDROCK_CHAT_MODEL": model}
            with stack.function(f"backfill-{stage}", environment=environment, label=f"backfill-{stage}-bedrock") as function:
                progress = function.invoke({"stage": stage, "batch_size": 10, "previous": {}}).value()
            assert (progress["processed"], progress["failed"], progress["remaining"]) == (1, 0, 0), stage
    finally:
        bedrock.converse_responder = None

    calls = [(r["model"], r["operation"], r["body"]["toolConfig"]["toolChoice"]["tool"]["name"]) for r in bedrock.requests]
    assert calls == [(model, "converse", "ProposedSegmentation")] + [(model, "converse", "ProposedKnowledge")] * 2
    assert all(r["auth"].startswith("AWS4-HMAC-SHA256 Credential=ASIAARTIFACTTEST/") for r in bedrock.requests)
    segments = database.execute(
        "SELECT s.title, s.method FROM segments s JOIN documents d ON d.id = s.document_id WHERE d.object_key LIKE %s"
        " ORDER BY s.segment_index",
        scanner,
    )
    assert segments == [("Leeds warehouse scanner rollout", "llm"), ("Rotterdam trade show booth", "llm")]
    assert {table: database.execute(f"SELECT count(*) FROM {table}")[0][0] for table in before} == before


VARIANTS = ("-extractive", "-bedrock", "-rerank", "-reader")  # labels of the query function run with other settings


def test_every_function_ran_from_its_artifacts_alone(stack: Stack, query: LambdaProcess) -> None:
    assert set(stack.inits) >= {"migrate", "ingest", "backfill-segment", "backfill-embed", "backfill-extract", "query"}
    for label, init in stack.inits.items():
        function = stack.artifacts.functions[next((label.removesuffix(v) for v in VARIANTS if label.endswith(v)), label)]
        assert (init["python"][:2], init["implementation"]) == ([3, 12], "cpython"), label
        assert init["present"] == [], label  # no numpy, torch, moto, pytest, ... on the path
        assert init["handler_file"] == str(function.asset / "handler.py"), label
        # The OpenAI SDK and the AWS SDK are imported by the paths that call them (tracing patches botocore then).
        assert not {"openai", "boto3", "botocore.client"} & set(init["modules"]), label
