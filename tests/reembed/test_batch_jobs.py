from __future__ import annotations

import datetime
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from rag.config import Settings
from rag.errors import EmbeddingError
from rag.reembed.batch_jobs import (
    BedrockBatchJobs,
    JobState,
    LocalBatchJobs,
    job_name,
    parse_output_line,
    request_token,
)
from rag.reembed.manifest import input_key, output_prefix, record_id
from rag.reembed.storage import LocalManifestStore, S3ManifestStore

BUCKET = "reembed-test"
ROLE = "arn:aws:iam::123456789012:role/rag-reembed-batch"
MODEL = "amazon.titan-embed-text-v2:0"
JOB_ID = "a1b2c3d4e5f6"
JOB_ARN = f"arn:aws:bedrock:us-east-1:123456789012:model-invocation-job/{JOB_ID}"
RUN = "20261126t0140"
SHAPES = botocore.session.get_session().get_service_model("bedrock")._shape_resolver._shape_map
JOB_NAME = re.compile(SHAPES["ModelInvocationJobName"]["pattern"])
TOKEN = re.compile(SHAPES["ModelInvocationIdempotencyToken"]["pattern"])
SETTINGS = Settings(embedding_provider="bedrock", reembed_bucket=BUCKET, reembed_role_arn=ROLE, reembed_job_timeout_hours=48)


def stubbed(settings: Settings = SETTINGS, store: S3ManifestStore | None = None) -> tuple[BedrockBatchJobs, Stubber]:
    client = boto3.client("bedrock", region_name="us-east-1")
    store = store or S3ManifestStore(BUCKET, boto3.client("s3", region_name="us-east-1"))
    return BedrockBatchJobs(settings, store, client=client), Stubber(client)


def create_request(manifest: int) -> dict[str, Any]:
    return {
        "jobName": f"rag-reembed-{RUN}-{manifest:05d}",
        "roleArn": ROLE,
        "clientRequestToken": request_token(RUN, manifest),
        "modelId": MODEL,
        "inputDataConfig": {"s3InputDataConfig": {"s3Uri": f"s3://{BUCKET}/reembed/{RUN}/input/{manifest:05d}.jsonl"}},
        "outputDataConfig": {"s3OutputDataConfig": {"s3Uri": f"s3://{BUCKET}/reembed/{RUN}/output/{manifest:05d}/"}},
        "timeoutDurationInHours": 48,
    }


def job(status: str, **extra: Any) -> dict[str, Any]:
    """GetModelInvocationJob's response, with the members its shape requires."""
    return {
        "jobArn": JOB_ARN,
        "jobName": f"rag-reembed-{RUN}-00003",
        "modelId": MODEL,
        "roleArn": ROLE,
        "status": status,
        "submitTime": datetime.datetime(2026, 11, 26, 1, 40, tzinfo=datetime.UTC),
        "inputDataConfig": {"s3InputDataConfig": {"s3Uri": f"s3://{BUCKET}/reembed/{RUN}/input/00003.jsonl"}},
        "outputDataConfig": {"s3OutputDataConfig": {"s3Uri": f"s3://{BUCKET}/reembed/{RUN}/output/00003/"}},
        **extra,
    }


def test_submit_sends_the_manifest_to_a_job_and_a_retried_submit_sends_the_same_name_and_token() -> None:
    jobs, stub = stubbed()
    stub.add_response("create_model_invocation_job", {"jobArn": JOB_ARN}, create_request(3))
    stub.add_response("create_model_invocation_job", {"jobArn": JOB_ARN}, create_request(3))
    stub.add_response("create_model_invocation_job", {"jobArn": JOB_ARN}, create_request(4))
    with stub:
        assert jobs.submit(RUN, 3, MODEL, 1024) == JOB_ARN
        assert jobs.submit(RUN, 3, MODEL, 1024) == JOB_ARN  # Bedrock answers a known token with the same job
        assert jobs.submit(RUN, 4, MODEL, 1024) == JOB_ARN
    stub.assert_no_pending_responses()


def test_request_token_is_one_per_run_and_manifest_within_bedrocks_pattern() -> None:
    tokens = {request_token(RUN, 3), request_token(RUN, 4), request_token(RUN + "b", 3), request_token(RUN, 3)}
    assert len(tokens) == 3
    assert all(TOKEN.fullmatch(token) and len(token) <= 256 for token in tokens)


@pytest.mark.parametrize(
    "run_id",
    [RUN, "2026-11-26_01:40 big corpus", "x" * 80, "x" * 79 + "y", "--odd--run--"],
)
def test_job_name_fits_bedrocks_pattern_and_length(run_id: str) -> None:
    for manifest in (0, 12345):
        name = job_name(run_id, manifest)
        assert JOB_NAME.fullmatch(name) and len(name) <= 63, name
        assert name.endswith(f"-{manifest:05d}")
    assert job_name("x" * 80, 1) != job_name("x" * 79 + "y", 1)  # cut to fit, still apart
    assert job_name("2026-11-26_01:40 big corpus", 7) == "rag-reembed-2026-11-26-01-40-big-corpus-00007"


def test_submit_without_a_role_is_a_clear_error_before_any_call() -> None:
    jobs, stub = stubbed(SETTINGS.with_values(reembed_role_arn=None))
    with stub, pytest.raises(ValueError, match="RAG_REEMBED_ROLE_ARN"):
        jobs.submit(RUN, 3, MODEL, 1024)


EXPECTED_STATES = {
    "Submitted": JobState("running", "Submitted"),
    "Validating": JobState("running", "Validating"),
    "Scheduled": JobState("running", "Scheduled"),
    "InProgress": JobState("running", "InProgress"),
    "Stopping": JobState("running", "Stopping"),
    "Completed": JobState("completed"),
    "PartiallyCompleted": JobState("completed", "2 of 100 records failed"),
    "Failed": JobState("failed", "Failed: the role cannot read the input"),
    "Stopped": JobState("failed", "Stopped: the role cannot read the input"),
    "Expired": JobState("failed", "Expired: the role cannot read the input"),
}


def test_every_status_bedrock_knows_is_mapped() -> None:
    assert set(EXPECTED_STATES) == set(SHAPES["ModelInvocationJobStatus"]["enum"])


@pytest.mark.parametrize("status", sorted(EXPECTED_STATES))
def test_state_maps_bedrocks_status(status: str) -> None:
    jobs, stub = stubbed()
    extra = {"message": "the role cannot read the input"} if EXPECTED_STATES[status].status == "failed" else {}
    if status == "PartiallyCompleted":
        extra = {"totalRecordCount": 100, "successRecordCount": 98, "errorRecordCount": 2}
    stub.add_response("get_model_invocation_job", job(status, **extra), {"jobIdentifier": JOB_ARN})
    with stub:
        assert jobs.state(JOB_ARN) == EXPECTED_STATES[status]


def test_a_failed_job_without_a_message_still_says_how_it_ended() -> None:
    jobs, stub = stubbed()
    stub.add_response("get_model_invocation_job", job("Expired"), {"jobIdentifier": JOB_ARN})
    with stub:
        assert jobs.state(JOB_ARN) == JobState("failed", "Expired: no message from Bedrock")


@pytest.mark.parametrize(
    ("code", "http_status", "transient"),
    [
        ("ThrottlingException", 429, True),
        ("InternalServerException", 500, True),
        ("ServiceQuotaExceededException", 400, True),  # too many jobs at once: one ends, this one starts
        ("ValidationException", 400, False),
        ("AccessDeniedException", 403, False),
        ("ResourceNotFoundException", 404, False),
        ("ConflictException", 400, False),
    ],
)
def test_submit_errors_are_transient_only_when_a_later_try_can_succeed(code: str, http_status: int, transient: bool) -> None:
    # Stubber answers before botocore's retry handler: this is the error left after the retries.
    jobs, stub = stubbed()
    stub.add_client_error(
        "create_model_invocation_job", service_error_code=code, service_message="Bedrock says no", http_status_code=http_status
    )
    with stub, pytest.raises(EmbeddingError, match=f"{code}: Bedrock says no") as raised:
        jobs.submit(RUN, 3, MODEL, 1024)
    assert raised.value.transient is transient


def test_state_errors_are_embedding_errors_too() -> None:
    jobs, stub = stubbed()
    stub.add_client_error("get_model_invocation_job", service_error_code="ThrottlingException", http_status_code=429)
    stub.add_client_error("get_model_invocation_job", service_error_code="ResourceNotFoundException", http_status_code=404)
    with stub:
        with pytest.raises(EmbeddingError) as throttled:
            jobs.state(JOB_ARN)
        with pytest.raises(EmbeddingError) as missing:
            jobs.state(JOB_ARN)
    assert throttled.value.transient is True and missing.value.transient is False


def test_stop_asks_bedrock_to_stop_the_job_and_leaves_one_that_ended_alone() -> None:
    jobs, stub = stubbed()
    stub.add_response("stop_model_invocation_job", {}, {"jobIdentifier": JOB_ARN})
    stub.add_client_error("stop_model_invocation_job", service_error_code="ValidationException", http_status_code=400,
                          service_message="the job is Completed")  # fmt: skip
    stub.add_client_error("stop_model_invocation_job", service_error_code="ThrottlingException", http_status_code=429)
    with stub:
        jobs.stop(JOB_ARN)
        jobs.stop(JOB_ARN)  # ended already: nothing to stop, no error
        with pytest.raises(EmbeddingError) as throttled:
            jobs.stop(JOB_ARN)
        stub.assert_no_pending_responses()
    assert throttled.value.transient is True


def result(n: int, vector: list[float]) -> str:
    return json.dumps(
        {
            "recordId": record_id(n),
            "modelInput": {"inputText": f"text {n}", "dimensions": 3, "normalize": True},
            "modelOutput": {"embedding": vector, "inputTextTokenCount": 2},
        }
    )


def error_result(n: int) -> str:
    return json.dumps(
        {
            "recordId": record_id(n),
            "modelInput": {"inputText": "", "dimensions": 3, "normalize": True},
            "error": {"errorCode": 400, "errorMessage": "Malformed input request: expected minLength: 1"},
        }
    )


@pytest.fixture
def s3() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield client


def test_output_lines_reads_the_results_bedrock_writes_and_not_its_manifest_summary(s3: Any) -> None:
    # As Bedrock lays a finished job out: <output s3Uri><job id>/<input file name>.out and manifest.json.out.
    folder = f"{output_prefix('reembed/', RUN, 3)}{JOB_ID}/"
    lines = [result(9, [0.5, -0.25, 0.125]), error_result(7), result(8, [1.0, 0.0, 0.0])]
    s3.put_object(Bucket=BUCKET, Key=input_key("reembed/", RUN, 3), Body=b"{}\n")
    s3.put_object(Bucket=BUCKET, Key=f"{folder}00003.jsonl.out", Body="\n".join(lines).encode() + b"\n")
    summary = {"totalRecordCount": 3, "processedRecordCount": 3, "successRecordCount": 2, "errorRecordCount": 1}
    s3.put_object(Bucket=BUCKET, Key=f"{folder}manifest.json.out", Body=json.dumps(summary).encode())
    s3.put_object(Bucket=BUCKET, Key=f"{output_prefix('reembed/', RUN, 3)}otherjob000/00003.jsonl.out", Body=b"x\n")
    jobs, _ = stubbed(store=S3ManifestStore(BUCKET, s3))

    read = list(jobs.output_lines(RUN, 3, JOB_ARN))

    assert read == lines
    assert sorted(parse_output_line(line) for line in read) == [
        (7, None, "400: Malformed input request: expected minLength: 1"),
        (8, [1.0, 0.0, 0.0], None),
        (9, [0.5, -0.25, 0.125], None),
    ]


def test_output_lines_of_a_job_that_wrote_nothing_is_a_clear_error(s3: Any) -> None:
    jobs, _ = stubbed(store=S3ManifestStore(BUCKET, s3))
    with pytest.raises(FileNotFoundError, match=f"{JOB_ID}/"):
        list(jobs.output_lines(RUN, 3, JOB_ARN))


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"modelOutput": {"embedding": [1.0]}}', "without a recordId"),
        ('{"recordId": "doc-7", "modelOutput": {"embedding": [1.0]}}', "not a record id"),
        ('{"recordId": "R0000000007", "modelInput": {}}', "R0000000007: neither modelOutput nor error"),
        ('{"recordId": "R0000000007", "modelOutput": {"inputTextTokenCount": 3}}', "R0000000007: a Titan response without"),
        ('{"recordId": "R0000000007", "modelOutput": {"embedding": ["a"]}}', "R0000000007"),
        ('{"recordId": "R0000000007", "error": "Throttled"}', "R0000000007: its error is not an object"),
    ],
)
def test_a_malformed_result_line_is_a_value_error_naming_what_is_wrong(line: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_output_line(line)


def manifest_lines(texts: list[str]) -> list[str]:
    return [json.dumps({"recordId": record_id(n), "modelInput": {"inputText": text}}) for n, text in enumerate(texts, 40)]


TEXTS = [
    "We decided to ship the battery pack in March.",
    "Anna owns the supplier contract review.",
    "",
    "The budget for the pilot is 40,000 euros, due by the end of the quarter.",
    "Next meeting: Thursday.",
    "Risks: the factory audit may slip a week, which moves the launch.",
    "Ümlaut and emoji 🎉 survive the round trip.",
]


def test_local_jobs_write_bedrocks_output_shape_with_the_local_models_vectors(tmp_path: Path, local_embedder: Any) -> None:
    store = LocalManifestStore(tmp_path)
    settings = Settings(embedding_batch_size=3, reembed_prefix="re/")
    store.put_lines(input_key("re/", RUN, 2), manifest_lines(TEXTS))
    jobs = LocalBatchJobs(local_embedder, store, settings)

    job = jobs.submit(RUN, 2, "all-MiniLM-L6-v2", local_embedder.dimension)

    assert job == f"local-{RUN}-2"
    assert jobs.state(job) == JobState("completed")
    assert store.keys(f"re/{RUN}/output/") == [f"re/{RUN}/output/00002/{job}/00002.jsonl.out"]
    records = [json.loads(line) for line in jobs.output_lines(RUN, 2, job)]
    assert [record["recordId"] for record in records] == [record_id(n) for n in range(40, 47)]
    assert [record["modelInput"] for record in records] == [{"inputText": text} for text in TEXTS]
    assert [record["modelOutput"]["inputTextTokenCount"] for record in records] == [
        local_embedder.count_tokens(text) for text in TEXTS
    ]
    parsed = [parse_output_line(line) for line in jobs.output_lines(RUN, 2, job)]
    assert [number for number, _, _ in parsed] == list(range(40, 47))
    assert all(error is None for _, _, error in parsed)
    # The job embeds in batches of 3: the same batches embedded directly give the same vectors, to the bit.
    expected = [vector for start in range(0, 7, 3) for vector in local_embedder.embed(TEXTS[start : start + 3])]
    assert [vector for _, vector, _ in parsed] == expected
    assert len(expected[0]) == local_embedder.dimension


def test_local_jobs_refuse_a_dimension_the_model_does_not_give(tmp_path: Path, local_embedder: Any) -> None:
    store = LocalManifestStore(tmp_path)
    store.put_lines(input_key("reembed/", RUN, 0), manifest_lines(TEXTS[:1]))
    with pytest.raises(ValueError, match="not 1024"):
        LocalBatchJobs(local_embedder, store, Settings()).submit(RUN, 0, "m", 1024)
    assert store.keys(f"reembed/{RUN}/output/") == []


def test_local_jobs_name_the_malformed_manifest_line_and_write_no_results(tmp_path: Path, local_embedder: Any) -> None:
    store = LocalManifestStore(tmp_path)
    store.put_lines(input_key("reembed/", RUN, 1), [*manifest_lines(TEXTS[:2]), '{"recordId": "R0000000099"}'])
    with pytest.raises(ValueError, match=r"00001\.jsonl line 3 is not a manifest record"):
        LocalBatchJobs(local_embedder, store, Settings()).submit(RUN, 1, "m", local_embedder.dimension)
    assert store.keys(f"reembed/{RUN}/output/") == []


def test_the_client_is_bedrocks_control_plane_in_the_bedrock_region_with_standard_retries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = S3ManifestStore(BUCKET, boto3.client("s3", region_name="us-east-1"))
    in_region = BedrockBatchJobs(SETTINGS.with_values(bedrock_region="eu-central-1", aws_region="us-west-2"), store)
    client = in_region._client
    assert client.meta.service_model.service_name == "bedrock"
    assert client.meta.region_name == "eu-central-1"
    assert client.meta.config.retries["mode"] == "standard"
    # Every other service at one endpoint (moto), Bedrock's at its own: the service's variable wins, as for the runtime.
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5000")
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK", "http://127.0.0.1:5999")
    local = BedrockBatchJobs(SETTINGS.with_values(aws_region="us-west-2"), store)
    assert local._client.meta.region_name == "us-west-2"
    assert local._client.meta.endpoint_url == "http://127.0.0.1:5999"
