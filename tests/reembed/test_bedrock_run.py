"""A whole run on AWS's path: manifests in S3 (moto's server), Bedrock batch jobs (a fake control plane on
localhost speaking the service's REST-JSON, which processes each manifest as Bedrock would and writes the results
where Bedrock writes them), and the online catch-up through Bedrock Runtime (the same fake), from the local model
to Titan Text Embeddings V2 at 512 dimensions."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from rag.config import Settings
from rag.reembed import steps
from rag.store.embedding_space import active_embedder, active_model
from tests.backfill.conftest import BUDGET_REVIEW, SCANNER_SYNC
from tests.reembed.test_switch import SOURCE, ingest, models

TARGET = "bedrock/amazon.titan-embed-text-v2:0@512"
BUCKET = "meeting-rag-reembed"


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    from moto.server import ThreadedMotoServer

    from tests.artifact.fake_bedrock import FakeBedrock

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    moto.start()
    try:
        with FakeBedrock() as bedrock:
            for name, value in {
                "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ENDPOINT_URL_BEDROCK": bedrock.url,
                "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": bedrock.url, "AWS_ACCESS_KEY_ID": "testing",
                "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
            }.items():  # fmt: skip
                monkeypatch.setenv(name, value)
            bedrock.s3 = boto3.client("s3", region_name="us-east-1")
            bedrock.s3.create_bucket(Bucket=BUCKET)
            yield bedrock
    finally:
        moto.stop()


@pytest.fixture
def moving(conn: Any, own_database: str) -> Settings:
    """A corpus of the local model, and settings moving it to Titan V2 at 512 d through the bucket's batch jobs."""
    from rag.embedding import get_embedder

    source = get_embedder(Settings(embedding_provider="local"))
    for project in ("orion", "atlas"):
        ingest(conn, SCANNER_SYNC, source, project)
        ingest(conn, BUDGET_REVIEW, source, project)
    return Settings(
        database_url=own_database, embedding_provider="local", llm_provider="none", reembed_provider="bedrock",
        reembed_dimension=512, reembed_bucket=BUCKET, reembed_manifest_records=100,
        reembed_role_arn="arn:aws:iam::123456789012:role/meeting-rag-reembed",
    )  # fmt: skip


def test_a_run_through_bedrock_batch_jobs_switches_to_titan(conn: Any, aws: Any, moving: Settings) -> None:
    jobs, store = steps.jobs_for(moving)
    assert type(jobs).__name__ == "BedrockBatchJobs"

    def step(event: dict[str, Any]) -> dict[str, Any]:
        return steps.run_step(conn, moving, jobs, store, event)

    planned = step({"action": "plan"})
    assert len(planned["manifests"]) >= 1
    for item in planned["manifests"]:
        submitted = step({"action": "submit", **item})
        assert step({"action": "submit", **item})["job_arn"] == submitted["job_arn"]  # a retried submit: the same job
        assert step({"action": "check", **submitted})["status"] == "running"
        assert step({"action": "check", **submitted})["status"] == "completed"
        imported = step({"action": "import", **submitted})
        assert imported["imported"] > 0 and imported["failed_records"] == 0
    created = [r["body"] for r in aws.requests if r["operation"] == "create-job"]
    assert len(created) == 2 * len(planned["manifests"])
    first = created[0]
    assert first["modelId"] == "amazon.titan-embed-text-v2:0"
    assert first["roleArn"] == "arn:aws:iam::123456789012:role/meeting-rag-reembed"
    assert (
        first["inputDataConfig"]["s3InputDataConfig"]["s3Uri"] == f"s3://{BUCKET}/reembed/{planned['run_id']}/input/00000.jsonl"
    )
    assert first["outputDataConfig"]["s3OutputDataConfig"]["s3Uri"] == f"s3://{BUCKET}/reembed/{planned['run_id']}/output/00000/"
    records = aws.s3.get_object(Bucket=BUCKET, Key=f"reembed/{planned['run_id']}/input/00000.jsonl")["Body"].read()
    assert b'"dimensions": 512, "normalize": true' in records.splitlines()[0]

    finished = step({"action": "finish", "run_id": planned["run_id"]})
    assert finished["status"] == "switched" and finished["caught_up"] > 0  # the rows no manifest held, online
    assert any(r["operation"] == "invoke" for r in aws.requests)
    assert active_model(conn) == (TARGET, 512)
    assert models(conn, "chunks") == {TARGET: conn.execute("SELECT count(*) FROM chunks").fetchone()[0]}
    assert active_embedder(conn, moving).model_id == TARGET
    assert models(conn, "chunks", "embedding_alt_model") == {SOURCE: conn.execute("SELECT count(*) FROM chunks").fetchone()[0]}


def test_a_failed_run_stops_its_jobs_still_running(conn: Any, aws: Any, moving: Settings) -> None:
    jobs, store = steps.jobs_for(moving)
    planned = steps.run_step(conn, moving, jobs, store, {"action": "plan"})
    submitted = steps.run_step(conn, moving, jobs, store, {"action": "submit", **planned["manifests"][0]})
    failed = steps.run_step(conn, moving, jobs, store, {"action": "fail", "run_id": planned["run_id"], "error": "boom"})
    assert failed == {"run_id": planned["run_id"], "status": "failed", "jobs_stopped": 1}
    stopped = [r["body"]["job"] for r in aws.requests if r["operation"] == "stop-job"]
    assert stopped == [submitted["job_arn"].rpartition("/")[2]]
    assert jobs.state(submitted["job_arn"]).status == "failed"  # Stopped
    assert active_model(conn) == (SOURCE, 384)  # the database stays in its model
    # The machine's failure path when the plan itself failed: no run to record.
    assert steps.run_step(conn, moving, jobs, store, {"action": "fail", "run_id": None, "error": "x"})["run_id"] is None
