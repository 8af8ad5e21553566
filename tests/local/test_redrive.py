"""`rag redrive` moves the DLQ's messages back to the queue; `rag status` shows the DLQ depth."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator

import boto3
import pytest
from moto.server import ThreadedMotoServer

from rag.config import get_settings
from rag_local.cli import build_parser, main
from rag_local.services import create_ingest_resources, move_dead_letters


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def local_services(tmp_path, monkeypatch, database_url) -> Iterator[tuple[object, str, str]]:
    """moto on a port of its own, as `rag up` runs it, with this process standing in for the services pid."""
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    queue = f"redrive-{port}"
    monkeypatch.setenv("RAG_LOCAL_DIR", str(tmp_path))
    monkeypatch.setenv("RAG_LOCAL_MOTO_PORT", str(port))
    monkeypatch.setenv("RAG_LOCAL_QUEUE", queue)
    monkeypatch.setenv("RAG_LOCAL_BUCKET", f"redrive-{port}")
    get_settings.cache_clear()
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "services.pid").write_text(str(os.getpid()))
    endpoint = f"http://127.0.0.1:{port}"
    s3 = boto3.client("s3", region_name="us-east-1", endpoint_url=endpoint)
    sqs = boto3.client("sqs", region_name="us-east-1", endpoint_url=endpoint)
    local = create_ingest_resources(s3, sqs, f"redrive-{port}", queue, "us-east-1")
    sqs.purge_queue(QueueUrl=local.url)  # the bucket's s3:TestEvent
    try:
        yield sqs, local.url, local.dlq_url
    finally:
        server.stop()


def depth(sqs, url: str) -> int:
    return int(
        sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])["Attributes"][
            "ApproximateNumberOfMessages"
        ]
    )


def test_redrive_moves_every_dead_letter_back_and_status_shows_the_dlq(local_services, capsys):
    sqs, queue_url, dlq_url = local_services
    bodies = {json.dumps({"Records": [{"eventSource": "aws:s3", "n": i}]}) for i in range(13)}  # more than a batch
    for body in bodies:
        sqs.send_message(QueueUrl=dlq_url, MessageBody=body)

    assert main(["status"]) == 0
    out = capsys.readouterr().out
    queue = os.environ["RAG_LOCAL_QUEUE"]
    assert f"queue {queue}-dlq: 13 waiting, 0 in flight" in out
    assert f"`rag redrive` moves them back to {queue}" in out

    assert main(["redrive"]) == 0
    assert f"moved 13 messages from {queue}-dlq back to {queue}" in capsys.readouterr().out
    assert (depth(sqs, queue_url), depth(sqs, dlq_url)) == (13, 0)
    moved = set()
    while messages := sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", []):
        moved |= {m["Body"] for m in messages}
    assert moved == bodies  # unchanged: the worker delivers them as before

    assert main(["redrive"]) == 0
    assert f"moved 0 messages from {queue}-dlq back to {queue}" in capsys.readouterr().out
    assert main(["status"]) == 0
    assert "rag redrive" not in capsys.readouterr().out  # nothing dead: no hint


def test_move_dead_letters_keeps_message_attributes():
    from moto import mock_aws

    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        dlq = sqs.create_queue(QueueName="q-dlq")["QueueUrl"]
        queue = sqs.create_queue(QueueName="q")["QueueUrl"]
        sqs.send_message(
            QueueUrl=dlq, MessageBody="{}", MessageAttributes={"origin": {"DataType": "String", "StringValue": "s3"}}
        )
        assert move_dead_letters(sqs, dlq, queue) == 1
        [message] = sqs.receive_message(QueueUrl=queue, MessageAttributeNames=["All"])["Messages"]
        assert message["MessageAttributes"]["origin"]["StringValue"] == "s3"


def test_redrive_without_services_says_what_to_do(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAG_LOCAL_DIR", str(tmp_path))
    get_settings.cache_clear()
    assert main(["redrive"]) == 1
    assert "run `rag up` first" in capsys.readouterr().err


def test_redrive_has_help(capsys):
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["redrive", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "usage: rag redrive" in out and "DLQ" in out and "prints how many" in " ".join(out.split())
