"""The backfill follows ingest: the ingest function starts the backfill state machine once it stored documents.

The real ingest handler on SQS batches of real S3 notifications, moto S3 and moto Step Functions
(executions stay RUNNING: moto runs no definition unless configured to), the real PostgreSQL.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

import boto3
import pytest
from botocore.stub import Stubber

from rag.backfill_trigger import execution_name, start_backfill
from rag_local.lambdas import LocalContext, load_handler_module
from tests.ingest.events import s3_notification, sqs_batch

BUCKET = "rag-follow-bucket"
KEY = "projects/apollo/2026-03-04-sync.txt"
TRANSCRIPT = b"Dana Kim: We ship the beta on Friday.\nRavi: I will write the release notes."
EXECUTION_INPUT = {"stages": ["segment", "embed", "extract"], "batch_size": 25, "max_iterations": 40}
DEFINITION = {"StartAt": "Work", "States": {"Work": {"Type": "Pass", "End": True}}}

pytestmark = pytest.mark.slow


@pytest.fixture
def machine(s3, monkeypatch) -> str:
    """A state machine in moto, configured as the ingest function's backfill (its ARN and input in the environment)."""
    sfn = boto3.client("stepfunctions", region_name="us-east-1")
    arn = sfn.create_state_machine(
        name="backfill", definition=json.dumps(DEFINITION), roleArn="arn:aws:iam::123456789012:role/backfill"
    )["stateMachineArn"]
    monkeypatch.setenv("RAG_BACKFILL_STATE_MACHINE_ARN", arn)
    monkeypatch.setenv("RAG_BACKFILL_EXECUTION_INPUT", json.dumps(EXECUTION_INPUT))
    from rag.config import get_settings

    get_settings.cache_clear()
    return arn


@pytest.fixture
def handler(s3, machine, db, local_embedder):
    from rag.aws import _client

    _client.cache_clear()  # boto3 clients must be created inside mock_aws
    return load_handler_module("ingest").lambda_handler


def deliver(handler, *keys: str) -> dict:
    return handler(sqs_batch(*(json.dumps(s3_notification(BUCKET, key)) for key in keys)), LocalContext(function_name="ingest"))


def executions(arn: str) -> list[dict]:
    return boto3.client("stepfunctions", region_name="us-east-1").list_executions(stateMachineArn=arn)["executions"]


def test_stored_documents_start_the_backfill_with_the_schedules_input(s3, handler, machine, db):
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=TRANSCRIPT)

    assert deliver(handler, KEY) == {"batchItemFailures": []}

    [execution] = executions(machine)
    assert execution["status"] == "RUNNING" and execution["name"].startswith("after-ingest-")
    described = boto3.client("stepfunctions", region_name="us-east-1").describe_execution(executionArn=execution["executionArn"])
    assert json.loads(described["input"]) == EXECUTION_INPUT
    assert db.execute("SELECT status FROM documents").fetchall() == [("raw_ingested",)]


def test_nothing_stored_starts_nothing(s3, handler, machine, db):
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=TRANSCRIPT)
    deliver(handler, KEY)
    boto3.client("stepfunctions", region_name="us-east-1").stop_execution(executionArn=executions(machine)[0]["executionArn"])

    deliver(handler, KEY)  # redelivered: nothing stored, nothing to backfill
    assert [e["status"] for e in executions(machine)] == ["ABORTED"]


def test_beside_a_running_execution_a_second_starts_never_a_third(s3, machine):
    sfn = boto3.client("stepfunctions", region_name="us-east-1")
    first = datetime(2026, 3, 4, 15, 30, 0, tzinfo=UTC)
    assert start_backfill(sfn, machine, EXECUTION_INPUT, first) == "started"
    # Minutes later the first may be past its segment stage: a document stored now gets a second execution.
    assert start_backfill(sfn, machine, EXECUTION_INPUT, first.replace(minute=35)) == "started"
    assert start_backfill(sfn, machine, EXECUTION_INPUT, first.replace(minute=40)) == "running"
    assert [e["status"] for e in executions(machine)] == ["RUNNING", "RUNNING"]


def test_a_document_stored_after_an_execution_ended_starts_another_even_in_the_same_window(s3, handler, machine, db):
    sfn = boto3.client("stepfunctions", region_name="us-east-1")
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=TRANSCRIPT)
    deliver(handler, KEY)
    sfn.stop_execution(executionArn=executions(machine)[0]["executionArn"])

    s3.put_object(Bucket=BUCKET, Key=KEY, Body=TRANSCRIPT + b"\nLee: One more thing.")
    deliver(handler, KEY)

    assert sorted(e["status"] for e in executions(machine)) == ["ABORTED", "RUNNING"]


def test_ingest_functions_starting_at_once_start_one_execution(s3, machine):
    sfn = boto3.client("stepfunctions", region_name="us-east-1")
    now = datetime(2026, 3, 4, 15, 30, 27, tzinfo=UTC)
    assert execution_name(now) == "after-ingest-20260304T153020"
    assert start_backfill(sfn, machine, EXECUTION_INPUT, now) == "started"

    # A second function listed the executions before the first one started: its start names the same execution.
    class ListedEarly:
        exceptions = sfn.exceptions

        def list_executions(self, **kwargs):
            return {"executions": []}

        def start_execution(self, **kwargs):
            return sfn.start_execution(**kwargs)

    assert start_backfill(ListedEarly(), machine, EXECUTION_INPUT, now.replace(second=29)) == "started"
    assert len(executions(machine)) == 1


def test_a_start_that_fails_is_logged_and_the_documents_stay_stored(s3, handler, machine, db, caplog):
    from rag.aws import stepfunctions_client
    from rag.config import get_settings

    client = stepfunctions_client(get_settings())
    stubber = Stubber(client)
    stubber.add_response("list_executions", {"executions": []})
    stubber.add_client_error("start_execution", "AccessDeniedException", "not authorized to perform states:StartExecution")
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=TRANSCRIPT)

    with stubber, caplog.at_level(logging.WARNING, logger="rag.backfill_trigger"):
        assert deliver(handler, KEY) == {"batchItemFailures": []}

    stubber.assert_no_pending_responses()
    assert db.execute("SELECT status FROM documents").fetchall() == [("raw_ingested",)]
    assert "could not start the backfill state machine" in caplog.text and "AccessDeniedException" in caplog.text


def test_a_lost_race_is_no_error(s3, machine):
    sfn = boto3.client("stepfunctions", region_name="us-east-1")
    stubber = Stubber(sfn)
    stubber.add_response("list_executions", {"executions": []})
    stubber.add_client_error("start_execution", "ExecutionAlreadyExists", "Execution Already Exists")
    stubber.add_client_error("start_execution", "ExecutionAlreadyExists", "Execution Already Exists")
    with stubber:
        assert start_backfill(sfn, machine, EXECUTION_INPUT) == "running"


def test_the_step_functions_client_gives_up_quickly_so_a_start_never_holds_up_the_ingest():
    from rag.aws import stepfunctions_client
    from rag.config import get_settings

    config = stepfunctions_client(get_settings()).meta.config
    assert (config.connect_timeout, config.read_timeout) == (3, 10)
    assert config.retries["mode"] == "standard" and config.retries["total_max_attempts"] == 2  # one retry
