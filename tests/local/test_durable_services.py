"""`rag up` end to end: kill -9 the services, `rag up` again, and nothing uploaded is gone; deletes reach the rows."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import psycopg
import pytest
from botocore.exceptions import ClientError, ConnectionClosedError, EndpointConnectionError

pytestmark = pytest.mark.slow

BUCKET = "durable-e2e"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "parsing"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(condition: Callable[[], object], what: str, timeout: float = 120) -> object:
    """Poll until ``condition`` is truthy (the bound only stops a hung test; nothing is timed)."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.5)
    return value


def test_a_killed_services_process_loses_nothing(tmp_path, database_url):
    local = tmp_path / "local"
    moto_port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "RAG_LOCAL_DIR": str(local),
        "RAG_LOCAL_MOTO_PORT": str(moto_port),
        "RAG_LOCAL_API_PORT": str(free_port()),
        "RAG_LOCAL_BUCKET": BUCKET,
    }
    env.pop("AWS_ENDPOINT_URL", None)
    s3 = boto3.client("s3", region_name="us-east-1", endpoint_url=f"http://127.0.0.1:{moto_port}")
    copied = "projects/durable/standup copy.vtt"  # as `aws s3 cp` uploads: no mirror write of its own
    copied_body = (FIXTURES / "standup.vtt").read_bytes()
    ingested = "projects/durable/kickoff.txt"

    def rag(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "rag_local.cli", *args], env=env, capture_output=True, text=True, timeout=300
        )

    def row(key: str) -> tuple | None:
        with psycopg.connect(database_url) as conn:
            return conn.execute(
                "SELECT s3_version_id, status FROM documents WHERE bucket = %s AND object_key = %s", (BUCKET, key)
            ).fetchone()

    up = rag("up")
    try:
        assert up.returncode == 0, up.stderr
        s3.put_object(Bucket=BUCKET, Key=copied, Body=copied_body, Metadata={"meeting-date": "2026-11-02"})
        kickoff = tmp_path / "kickoff.txt"
        kickoff.write_bytes((FIXTURES / "design_meeting.txt").read_bytes())
        ingest = rag("ingest", str(kickoff), "--project", "durable", "--quiet", "--timeout", "120")
        assert ingest.returncode == 0, ingest.stderr
        wait_for(lambda: row(copied), f"{copied} to be ingested")

        pid = int((local / "run" / "services.pid").read_text())
        os.kill(pid, signal.SIGKILL)  # moto's memory goes with it

        again = rag("up")
        assert again.returncode == 0, again.stderr
        assert "services     started" in again.stdout  # (a killed process is not taken for a running one)
        assert s3.get_object(Bucket=BUCKET, Key=copied)["Body"].read() == copied_body
        assert s3.get_object(Bucket=BUCKET, Key=copied)["Metadata"] == {"meeting-date": "2026-11-02"}
        assert s3.get_object(Bucket=BUCKET, Key=ingested)["Body"].read() == kickoff.read_bytes()
        # The restore's notifications went through the handler: rows now name the new versions (at any stage of
        # the backfill the worker runs after ingesting).
        for key in (copied, ingested):
            version = s3.head_object(Bucket=BUCKET, Key=key)["VersionId"]
            wait_for(
                lambda key=key, version=version: (found := row(key)) and found[0] == version and found[1] != "failed",
                f"the row of {key} to record version {version}",
            )

        log = (local / "logs" / "services.log").read_text()
        assert log.count("--- rag up ") == 2 and log.splitlines().count("ready") == 2  # appended, not truncated

        s3.delete_object(Bucket=BUCKET, Key=copied)  # a delete marker: moto sends no notification for it
        wait_for(lambda: row(copied) is None, f"the rows of {copied} to be deleted")
        assert row(ingested) is not None
    finally:
        down = rag("down")
    assert down.returncode == 0
    assert not list(Path(local, "s3", BUCKET).glob("*.tmp"))


@dataclass
class StuckServices:
    """`rag up`'s services whose worker hangs in the embedding call, and 51 uploads they acknowledged."""

    settings: Any
    endpoint: str
    project: str  # the uploads' key prefix
    s3: Any
    uploads: dict[str, bytes]
    fake: Any  # the fake OpenAI server the worker hangs in

    def start_again(self) -> None:
        from rag_local import supervisor

        self.fake.embeddings_open.set()  # (the start embeds a warm-up text)
        supervisor.start_services(self.settings, timeout=120)

    def listed(self) -> dict[str, bytes]:
        """Every object of the bucket, with its bytes."""
        keys = [obj["Key"] for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET)
                for obj in page.get("Contents", [])]  # fmt: skip
        return {key: self.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read() for key in keys}


@pytest.fixture
def stuck_services(tmp_path, database_url, monkeypatch) -> Iterator[StuckServices]:
    """The worker cannot help here (it holds one batch until it is killed), and the periodic reconcile runs
    every few seconds: only the upload itself (or the stop) can put the last uploads on disk."""
    from rag.config import Settings
    from rag_local import supervisor
    from tests.embedding.fake_openai import FakeOpenAI

    local = tmp_path / "local"
    moto_port = free_port()
    for name, value in {
        "DATABASE_URL": database_url,
        "RAG_LOCAL_DIR": str(local),
        "RAG_LOCAL_MOTO_PORT": str(moto_port),
        "RAG_LOCAL_API_PORT": str(free_port()),
        "RAG_LOCAL_BUCKET": BUCKET,
        "RAG_EMBEDDING_PROVIDER": "openai",
        "OPENAI_API_KEY": "test-key",
    }.items():
        monkeypatch.setenv(name, value)
    endpoint = f"http://127.0.0.1:{moto_port}"
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)  # what `rag up` sets for the services
    s3 = boto3.client("s3", region_name="us-east-1", endpoint_url=endpoint)
    body = (FIXTURES / "design_meeting.txt").read_bytes()
    project = f"projects/stuck-{uuid.uuid4().hex[:8]}"  # the rows of another test's first upload must not make this one a no-op
    uploads = {f"{project}/first.txt": body}

    with FakeOpenAI() as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        settings = Settings()
        supervisor.start_services(settings, timeout=120)
        try:
            fake.embeddings_open.clear()  # from now on the worker's batch hangs in the embedding call
            s3.put_object(Bucket=BUCKET, Key=f"{project}/first.txt", Body=body)
            wait_for(lambda: len(fake.requests) > 1, "the worker to start embedding the first batch")
            # 50 objects uploaded as `aws s3 cp` does (nothing but the upload itself)
            for i in range(50):
                key, data = f"{project}/meeting {i:02d}.txt", body + f"Maya: Item {i} is done.\n".encode()
                s3.put_object(Bucket=BUCKET, Key=key, Body=data)
                uploads[key] = data
            yield StuckServices(settings, endpoint, project, s3, uploads, fake)
        finally:
            fake.embeddings_open.set()
            supervisor.stop_services(settings)


def test_a_graceful_stop_loses_no_acknowledged_upload(stuck_services):
    """`rag down` right after the uploads, with uploads still coming while it stops."""
    from botocore.config import Config

    from rag_local import supervisor

    settings = stuck_services.settings
    # A client that takes no for an answer: a refused upload is reported, never retried into the restart.
    late_s3 = boto3.client("s3", region_name="us-east-1", endpoint_url=stuck_services.endpoint,
                           config=Config(retries={"max_attempts": 1}))  # fmt: skip

    # WHEN the services are stopped right after the uploads, with uploads still coming while they stop, while the
    # worker's batch hangs in the embedding call (a client timeout may have ended one attempt: wait for the next)
    wait_for(lambda: stuck_services.fake.embeddings_held > 0, "the worker's batch to hang in the embedding call")
    stopping = threading.Thread(target=supervisor.stop_services, args=(settings,), kwargs={"wait_seconds": 10})
    stopping.start()
    late_acknowledged, late_refused = {}, 0
    while stopping.is_alive():
        key, data = f"{stuck_services.project}/late {len(late_acknowledged) + late_refused:03d}.txt", b"A: late.\n"
        try:
            late_s3.put_object(Bucket=BUCKET, Key=key, Body=data)
            late_acknowledged[key] = data
        except (ClientError, EndpointConnectionError, ConnectionClosedError):  # refused, or cut by the kill: not acknowledged
            late_refused += 1
        time.sleep(0.05)
    stopping.join()
    try:  # the stop may finish before a late upload was refused (a fast machine): one more, now it is down
        late_s3.put_object(Bucket=BUCKET, Key=f"{stuck_services.project}/after the stop.txt", Body=b"A: late.\n")
    except (ClientError, EndpointConnectionError, ConnectionClosedError):
        late_refused += 1

    # THEN the next start holds every acknowledged upload, byte for byte
    stuck_services.start_again()
    assert stuck_services.listed() == {**stuck_services.uploads, **late_acknowledged}
    assert late_refused > 0  # the uploads that came once the stop began were refused, not dropped


def test_a_kill_right_after_the_uploads_loses_no_acknowledged_upload(stuck_services):
    """No stop at all (kill -9 the moment the last upload is acknowledged): an acknowledged upload is on disk."""
    from rag_local import supervisor

    settings = stuck_services.settings
    pid = supervisor.services_pid(settings)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)  # no last mirror pass: moto's memory goes at once

    stuck_services.start_again()
    assert stuck_services.listed() == stuck_services.uploads
