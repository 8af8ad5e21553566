"""A move to another embedding model through the deployed functions, run from the layer alone on CPython 3.12.

The re-embed function plans, writes each manifest to S3 (moto), starts Bedrock batch jobs (the fake control plane,
which processes them as Bedrock does), imports the results and switches; the query function, configured with the
target as the stack configures it, then searches in the new model. A module of its own: the switch changes its
database for good.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.artifact.harness import (
    Artifacts,
    Invocation,
    Stack,
    build_artifacts,
    create_schema,
    receive_all,
    sqs_event,
)  # fmt: skip
from tests.artifact.test_deployed_flows import BACKFILL_FIXTURES, EXAMPLES, call

pytestmark = pytest.mark.slow

UPLOADS = {
    "tenants/acme/projects/remote/2026-11-02-battery-review.txt": EXAMPLES / "2026-11-02-battery-review.txt",
    "tenants/acme/projects/remote/2026-11-09-launch-standup.vtt": EXAMPLES / "2026-11-09-launch-standup.vtt",
    "tenants/acme/projects/remote/remote-control-spec.md": EXAMPLES / "remote-control-spec.md",
    **{f"tenants/acme/projects/warehouse/{path.name}": path for path in sorted((BACKFILL_FIXTURES / "transcripts").iterdir())},
}
# As the stack sets them for a move to Titan V2 at 512 dimensions (the stage embeds at 1,024).
TARGET = {"RAG_REEMBED_PROVIDER": "bedrock", "RAG_REEMBED_DIMENSION": "512", "RAG_REEMBED_MANIFEST_RECORDS": "100"}
TARGET_ID = "bedrock/amazon.titan-embed-text-v2:0@512"


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Artifacts:
    """The stage with Bedrock's embeddings, which brings the re-embedding's function, bucket and machine."""
    bedrock = {"embedding_provider": "bedrock", "embedding_model": "amazon.titan-embed-text-v2:0", "embedding_dimension": 1024}
    return build_artifacts(tmp_path_factory.mktemp("artifacts-bedrock"), context=bedrock)


@pytest.fixture(scope="module")
def moved(stack: Stack) -> dict[str, Any]:
    create_schema(stack)
    services = stack.services
    s3 = services.client("s3")
    for key, path in UPLOADS.items():
        s3.put_object(Bucket=services.bucket, Key=key, Body=path.read_bytes())
    event = sqs_event(receive_all(services, len(UPLOADS) + 1), services.queue_arn)
    small_chunks = {"RAG_CHUNK_TOKENS": "24", "RAG_CHUNK_OVERLAP_TOKENS": "0"}  # a table of 100 rows and more
    with stack.function("ingest", environment=small_chunks) as ingest:
        assert ingest.invoke(event).value() == {"batchItemFailures": []}
    steps: list[tuple[str, Invocation]] = []
    with stack.function("reembed", environment=TARGET) as function:

        def step(event: dict[str, Any]) -> dict[str, Any]:
            invocation = function.invoke(event)
            steps.append((event["action"], invocation))
            result: dict[str, Any] = invocation.value()
            return result

        planned = step({"action": "plan"})
        for item in planned["manifests"]:
            submitted = step({"action": "submit", **item})
            while step({"action": "check", **submitted})["status"] == "running":
                pass  # the fake answers InProgress once
            step({"action": "import", **submitted})
        finished = step({"action": "finish", "run_id": planned["run_id"]})
        init = function.init
    with stack.function("query", environment=TARGET, label="query-moved") as query:
        status, body = call(query, "POST", "/v1/search", {"query": "battery", "mode": "semantic", "top_k": 3},
                            tenant="acme")  # fmt: skip
    return {"planned": planned, "finished": finished, "steps": steps, "init": init, "search": (status, body)}


def test_the_deployed_function_moves_the_corpus_through_bedrock_batch_jobs(stack: Stack, moved: dict[str, Any]) -> None:
    planned = moved["planned"]
    assert planned["run_id"] and planned["manifests"] and planned["records"] >= 100
    assert [action for action, _ in moved["steps"]][:4] == ["plan", "submit", "check", "check"]
    assert moved["finished"]["status"] == "switched"
    requests = stack.services.bedrock.requests
    jobs = [r["body"] for r in requests if r["operation"] == "create-job"]
    assert len(jobs) == len(planned["manifests"]) and all(job["modelId"] == "amazon.titan-embed-text-v2:0" for job in jobs)
    assert all(job["roleArn"].endswith(":role/meeting-rag-reembed-jobs") for job in jobs)
    assert all(job["inputDataConfig"]["s3InputDataConfig"]["s3Uri"].startswith(f"s3://{stack.services.reembed_bucket}/")
               for job in jobs)  # fmt: skip
    [(model, dimension)] = stack.services.database.execute("SELECT model_id, dimension FROM embedding_space")
    assert (model, dimension) == (TARGET_ID, 512)
    [(models,)] = stack.services.database.execute("SELECT array_agg(DISTINCT embedding_model) FROM chunks")
    assert models == [TARGET_ID]


def test_searches_run_in_the_new_model_once_switched(stack: Stack, moved: dict[str, Any]) -> None:
    status, body = moved["search"]
    assert status == 200 and body["results"], body
    invoked = [r["body"] for r in stack.services.bedrock.requests if r["operation"] == "invoke"]
    assert invoked[-1]["dimensions"] == 512 and invoked[-1]["inputText"] == "battery"  # the query, in the new model


def test_the_function_loads_what_a_step_needs_and_nothing_else(moved: dict[str, Any]) -> None:
    init = moved["init"]
    assert init["present"] == []  # the layer, the asset and the runtime's boto3 only
    assert not {"numpy", "onnxruntime", "torch"} & {name.split(".")[0] for name in init["modules"]}
