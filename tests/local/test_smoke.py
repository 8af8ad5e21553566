"""`rag smoke`: the post-deploy check, run against the local stack of `rag up`, and its reading of a stack's outputs."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import boto3
import psycopg
import pytest

from rag_local.smoke import STEP_NAMES
from rag_local.stack_access import ApiClient, SigV4, StepFailed, execute_api_region, read_stack_outputs

BUCKET = "smoke-e2e"
STEPS = list(STEP_NAMES)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(condition, what: str, timeout: float = 60) -> None:
    """Poll until ``condition()`` holds (the bound only stops a hung test; nothing is timed)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.5)


def table_rows(stdout: str) -> dict[str, tuple[str, str]]:
    """The table `rag smoke` prints, as step -> (result, detail)."""
    lines = stdout.strip().splitlines()
    assert lines[0].split()[:2] == ["step", "result"], stdout
    rows = {}
    for line in lines[1:-1]:
        for name in STEPS:
            if line.startswith(name + "  "):
                rest = line[len(name) :].split(maxsplit=1)
                result, detail = rest[0], rest[1] if len(rest) > 1 else ""
                rows[name] = (result, detail.split(" s  ", 1)[-1].strip())
    assert list(rows) == STEPS, stdout
    return rows


@pytest.fixture(scope="module")
def local_stack(tmp_path_factory: pytest.TempPathFactory, database_url: str) -> Iterator[dict[str, str]]:
    """`rag up` on free ports with a local folder of its own (the session's test database); yields its environment."""
    local = tmp_path_factory.mktemp("smoke") / "local"
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "RAG_LOCAL_DIR": str(local),
        "RAG_LOCAL_MOTO_PORT": str(free_port()),
        "RAG_LOCAL_API_PORT": str(free_port()),
        "RAG_LOCAL_BUCKET": BUCKET,
        "RAG_API_KEYS": "dev-local-key=default,k-acme=acme",
    }
    env.pop("AWS_ENDPOINT_URL", None)
    env.pop("RAG_SMOKE_TOKEN", None)
    up = rag(env, "up")
    try:
        assert up.returncode == 0, up.stderr
        yield env
    finally:
        rag(env, "down")  # DATABASE_URL is set: this stops the services process only, never PostgreSQL


def rag(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rag_local.cli", *args], env=env, capture_output=True, text=True, timeout=600)


def bucket_keys(env: dict[str, str]) -> list[str]:
    s3 = boto3.client("s3", region_name="us-east-1", endpoint_url=f"http://127.0.0.1:{env['RAG_LOCAL_MOTO_PORT']}")
    return [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])]


def smoke_documents(database_url: str) -> list[tuple[str, str]]:
    with psycopg.connect(database_url) as conn:
        return conn.execute("SELECT object_key, status FROM documents WHERE bucket = %s", (BUCKET,)).fetchall()


@pytest.mark.slow
def test_a_smoke_check_of_the_local_stack_passes_every_step_and_leaves_nothing_behind(local_stack, database_url):
    # The uploader role path: STS (moto) issues the role's credentials, and the upload uses them.
    role = "arn:aws:iam::123456789012:role/acme-sync"

    smoke = rag(local_stack, "smoke", "--local", "--upload-role", role, "--timeout", "120")

    assert smoke.returncode == 0, smoke.stdout + smoke.stderr
    rows = table_rows(smoke.stdout)
    assert {name: result for name, (result, _) in rows.items()} == dict.fromkeys(STEPS, "PASS")
    assert rows["api"][1].startswith("GET /v1/projects: authenticated")
    assert rows["upload"][1].startswith(f"s3://{BUCKET}/projects/smoke-") and rows["upload"][1].endswith(f"as {role}")
    # rag up's worker backfills what it ingested: the smoke may find the document at any stage of that.
    assert rows["ingest"][1].split(",")[0] in ("raw_ingested", "segmented", "embedded", "extracted")
    assert rows["ingest"][1].split(", ", 1)[1].startswith("1 chunk after")
    for mode in ("semantic", "keyword", "hybrid"):
        assert rows[f"search {mode}"][1].startswith("rank 1 of 1, score")
    assert rows["context"][1].startswith("passage [1] of 1")
    assert rows["ask"][1].startswith("extractive answer citing [1]")
    assert rows["mcp tools/list"][1] == (
        "8 tools: search, build_context, list_projects, recent_meetings, open_tasks, changes_since, project_brief, read_document"
    )
    assert rows["mcp search"][1] == "tools/call search: the transcript is [1]"
    assert "deleted; the document is gone after" in rows["delete"][1]
    assert smoke.stdout.strip().splitlines()[-1] == "11 passed, 0 failed, 0 skipped"
    assert "smoke check of http://127.0.0.1:" in smoke.stderr
    # What it uploaded is gone: no current object, no document row.
    assert bucket_keys(local_stack) == []
    assert smoke_documents(database_url) == []


@pytest.mark.slow
def test_a_wrong_token_fails_the_api_step_exits_1_and_uploads_nothing(local_stack, database_url):
    smoke = rag(local_stack, "smoke", "--local", "--token", "not-a-key")

    assert smoke.returncode == 1
    rows = table_rows(smoke.stdout)
    assert rows["api"][0] == "FAIL"
    assert rows["api"][1].startswith("GET /v1/projects: HTTP 401:") and "unauthenticated" in rows["api"][1]
    assert {name: result for name, (result, _) in rows.items() if name != "api"} == dict.fromkeys(STEPS[1:], "SKIP")
    assert all(detail == "the API check failed" for name, (_, detail) in rows.items() if name != "api")
    assert smoke.stdout.strip().splitlines()[-1] == "0 passed, 1 failed, 10 skipped"
    assert bucket_keys(local_stack) == []
    assert smoke_documents(database_url) == []


@pytest.mark.slow
def test_a_local_key_of_another_tenant_uploads_under_that_tenants_prefix(local_stack, database_url):
    smoke = rag(local_stack, "smoke", "--local", "--token", "k-acme", "--timeout", "120")

    assert smoke.returncode == 0, smoke.stdout + smoke.stderr
    rows = table_rows(smoke.stdout)
    assert {result for result, _ in rows.values()} == {"PASS"}
    assert rows["upload"][1].startswith(f"s3://{BUCKET}/tenants/acme/projects/smoke-")
    assert bucket_keys(local_stack) == [] and smoke_documents(database_url) == []

    mismatch = rag(local_stack, "smoke", "--local", "--token", "k-acme", "--tenant", "globex")
    assert mismatch.returncode == 1 and mismatch.stdout == ""
    assert mismatch.stderr == "error: the API key belongs to tenant acme, not globex (RAG_API_KEYS)\n"


@pytest.mark.slow
def test_a_document_the_caller_cannot_see_fails_the_ingest_skips_what_needs_it_and_is_deleted(local_stack, database_url):
    """Any API and bucket (--api-url, --bucket): a token of the default tenant never sees tenant acme's upload."""
    env = {**local_stack, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{local_stack['RAG_LOCAL_MOTO_PORT']}"}
    api = f"http://127.0.0.1:{local_stack['RAG_LOCAL_API_PORT']}/"
    args = ("--api-url", api, "--bucket", BUCKET, "--token", "dev-local-key", "--tenant", "acme", "--timeout", "4")

    smoke = rag(env, "smoke", *args)

    assert smoke.returncode == 1
    rows = table_rows(smoke.stdout)
    assert {name: result for name, (result, _) in rows.items()} == {
        "api": "PASS", "upload": "PASS", "ingest": "FAIL", "search semantic": "SKIP", "search keyword": "SKIP",
        "search hybrid": "SKIP", "context": "SKIP", "ask": "SKIP", "mcp tools/list": "PASS", "mcp search": "SKIP",
        "delete": "PASS",
    }  # fmt: skip
    assert rows["upload"][1].endswith("as your credentials")
    assert rows["ingest"][1].endswith(
        "to be ingested: not done within 4 s; is the caller of tenant acme, whose prefix the file is under? "
        "`aws logs tail <IngestLogGroupName> --since 15m` says what happened to the file"
    )
    assert rows["search hybrid"][1] == "the transcript was not ingested"
    assert rows["delete"][1].endswith("smoke-check.txt deleted (the API never listed it)")
    assert "to be ingested (0 s of at most 4 s)" in smoke.stderr  # progress while it waits
    assert bucket_keys(local_stack) == []
    # The upload was ingested for acme all the same; its delete reaches the row (the reconcile sees the delete marker).
    wait_for(lambda: smoke_documents(database_url) == [], "the smoke document's row to go")


def test_a_smoke_check_without_a_target_or_token_says_what_to_pass(monkeypatch, capsys):
    from rag_local.cli import main

    monkeypatch.delenv("RAG_SMOKE_TOKEN", raising=False)
    assert main(["smoke"]) == 1
    assert capsys.readouterr().err == "error: say which stack: --stack <name>, --local, or both --api-url and --bucket\n"
    assert main(["smoke", "--api-url", "https://abc.execute-api.eu-west-1.amazonaws.com", "--bucket", "b"]) == 1
    assert capsys.readouterr().err.startswith("error: pass --token (or set RAG_SMOKE_TOKEN)")


def test_smoke_against_aws_leaves_the_environment_alone(monkeypatch):
    """`rag smoke --stack` must reach AWS with the caller's credentials, not the local moto server's."""
    from rag_local import cli
    from rag_local.commands import smoke

    seen = {}
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.setattr(smoke, "run", lambda args, settings: seen.update(endpoint=os.environ.get("AWS_ENDPOINT_URL")) or 0)

    assert cli.main(["smoke", "--stack", "MeetingRag-prod"]) == 0
    assert seen == {"endpoint": None}
    assert cli.main(["smoke", "--local"]) == 0
    assert seen["endpoint"].startswith("http://127.0.0.1:")


# --- the stack's outputs ------------------------------------------------------------------


@pytest.fixture(scope="module")
def synthesized_outputs() -> dict[str, dict]:
    """The Outputs of the real prod template, synthesized with three tenant uploaders (one the default tenant)."""
    import tempfile

    # isort: off
    from infra import node as _node  # noqa: F401  (JSII_NODE before aws_cdk is imported)
    import aws_cdk as cdk
    from infra.stack import build
    # isort: on

    uploaders = {"acme": "arn:aws:iam::111122223333:role/acme-sync", "default": "arn:aws:iam::111122223333:role/sync",
                 "globex.eu": "arn:aws:iam::111122223333:role/globex-sync"}  # fmt: skip
    with tempfile.TemporaryDirectory() as outdir:
        context = {"aws:cdk:bundling-stacks": [], "alarm_email": "ops@example.com", "tenant_uploaders": uploaders}
        app = cdk.App(context=context, outdir=outdir)
        stack = build(app, "prod")
        return app.synth().get_stack_by_name(stack.stack_name).template["Outputs"]


@pytest.mark.slow
def test_the_outputs_of_the_real_template_are_read_from_describe_stacks(synthesized_outputs):
    """The template's output keys and descriptions, with deployed values, through moto's CloudFormation."""
    from moto import mock_aws

    deployed = {
        "BucketName": "meetingrag-prod-ingestdocuments-1a2b3c",
        "ApiUrl": "https://a1b2c3.execute-api.eu-west-1.amazonaws.com",
        "ServiceApiUrl": "https://d4e5f6.execute-api.eu-west-1.amazonaws.com",
        "IngestLogGroupName": "/aws/lambda/MeetingRag-prod-IngestFunction",
    }
    outputs = {}
    for key, output in synthesized_outputs.items():
        role = next((t for t in ("acme", "default", "globexeu") if key.startswith(f"TenantUploaders{t}RoleArn")), None)
        value = deployed.get(key) or (f"arn:aws:iam::111122223333:role/MeetingRag-prod-{role}-Uploader" if role else "x")
        outputs[key] = {"Value": value, **({"Description": output["Description"]} if "Description" in output else {})}
    template = {"Resources": {"Handle": {"Type": "AWS::SQS::Queue"}}, "Outputs": outputs}

    with mock_aws():
        cloudformation = boto3.client("cloudformation", region_name="eu-west-1")
        cloudformation.create_stack(StackName="MeetingRag-prod", TemplateBody=json.dumps(template))
        read = read_stack_outputs(cloudformation, "MeetingRag-prod")

    assert (read.bucket_name, read.api_url, read.service_api_url, read.ingest_log_group) == tuple(deployed.values())
    roles = {r.tenant_id: (r.role_arn, r.prefixes) for r in read.uploader_roles}
    assert roles == {
        "acme": ("arn:aws:iam::111122223333:role/MeetingRag-prod-acme-Uploader", ("tenants/acme/",)),
        "default": ("arn:aws:iam::111122223333:role/MeetingRag-prod-default-Uploader", ("tenants/default/", "projects/")),
        "globex.eu": ("arn:aws:iam::111122223333:role/MeetingRag-prod-globexeu-Uploader", ("tenants/globex.eu/",)),
    }
    assert read.uploader_for(None).tenant_id == "default"  # the short projects/ form: the default tenant's role
    assert read.uploader_for("globex.eu").tenant_id == "globex.eu"
    assert read.uploader_for("initech") is None


def test_a_missing_stack_or_output_is_a_readable_setup_error():
    from moto import mock_aws

    from rag_local.stack_access import SmokeSetupError

    with mock_aws():
        cloudformation = boto3.client("cloudformation", region_name="eu-west-1")
        with pytest.raises(
            SmokeSetupError, match="cannot read stack MeetingRag-prod in eu-west-1: Stack with id MeetingRag-prod does not exist"
        ):
            read_stack_outputs(cloudformation, "MeetingRag-prod")
        template = {
            "Resources": {"Handle": {"Type": "AWS::SQS::Queue"}},
            "Outputs": {"BucketName": {"Value": "b"}},
        }
        cloudformation.create_stack(StackName="Other", TemplateBody=json.dumps(template))
        with pytest.raises(
            SmokeSetupError, match=r"stack Other \(CREATE_COMPLETE\) has no output ApiUrl: is it a meeting-rag stack\?"
        ):
            read_stack_outputs(cloudformation, "Other")


# --- IAM signing ------------------------------------------------------------------------------


def test_iam_requests_carry_a_sigv4_signature_for_execute_api():
    """What the API receives with --iam: SigV4 for execute-api in the URL's region, the signed body unchanged."""
    from botocore.credentials import Credentials

    received: list[tuple[str, dict[str, str], bytes]] = []

    class Recorder(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.path, dict(self.headers), body))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"results": []}')

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        auth = SigV4(Credentials("AKIDEXAMPLE", "secret", "session-token"), "eu-west-1")
        reply = ApiClient(f"http://127.0.0.1:{server.server_address[1]}/", auth).call("POST", "/v1/search", {"query": "q"})
    finally:
        server.shutdown()
        server.server_close()

    assert reply == {"results": []}
    ((path, headers, body),) = received
    assert path == "/v1/search" and json.loads(body) == {"query": "q"}
    assert headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/eu-west-1/execute-api/aws4_request, SignedHeaders=" in headers["Authorization"]
    assert headers["X-Amz-Security-Token"] == "session-token" and headers["X-Amz-Date"]
    assert execute_api_region("https://a1b2c3.execute-api.eu-west-1.amazonaws.com") == "eu-west-1"
    assert execute_api_region("https://api.example.com") is None


def test_an_unreachable_api_fails_the_step_with_where_it_tried():
    from rag_local.stack_access import BearerToken

    with pytest.raises(StepFailed, match=r"cannot reach http://127\.0\.0\.1:\d+/v1/projects: .*refused"):
        ApiClient(f"http://127.0.0.1:{free_port()}", BearerToken("t")).call("GET", "/v1/projects")
