"""The Lambda artifacts, built as the CDK app builds them and run as Lambda runs them.

- ``build_artifacts``: the layer (``infra.bundling``'s own steps, cached by bench/layer_size.py), the CDK app
  synthesized with bundling skipped (CDK stages each plain function asset in cdk.out, exactly as it uploads it;
  the migrator's bundled asset comes from its ``CopyBundler`` and ``infra.constructs.migrations.ASSET_FILES``),
  each function's handler and environment read from the template, and a folder standing for Lambda's runtime:
  boto3 and the packages it needs (hard-linked from the development venv, compiled for 3.12).
- ``Services``: what a deployed stack talks to, locally: moto (``ThreadedMotoServer``), an OpenAI-compatible
  model (``ScriptedModel``), a Bedrock Runtime endpoint (``FakeBedrock``), an X-Ray daemon (UDP) and a fresh
  database on the test session's PostgreSQL, with the secrets and the bucket notifications the template sets up.
- ``LambdaProcess``: one function's execution environment: CPython 3.12 (``-S -P``: no site-packages, no script
  folder) running tests/artifact/lambda_bootstrap.py with the asset, the layer and the runtime folder on the path,
  in Lambda's order, and the function's environment. Each ``invoke`` is one event; the first one after the import
  is the cold start's first request.

The database server must let local clients log in without a password (the embedded server of ``rag up`` does):
functions connect as the application role with an IAM token, as they do through RDS Proxy, and the token is
not checked here.
"""

from __future__ import annotations

import copy
import importlib.metadata
import importlib.util
import json
import logging
import os
import queue
import secrets
import shutil
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

REPO_ROOT = Path(__file__).resolve().parents[2]
BOOTSTRAP = Path(__file__).with_name("lambda_bootstrap.py")
EVENTS = REPO_ROOT / "tests" / "fixtures" / "events"
REGION = "us-east-1"
ACCOUNT = "123456789012"
# What Lambda's Python runtime ships besides the standard library (the layer leaves boto3 out on purpose).
RUNTIME_MODULES = ("boto3", "botocore", "s3transfer", "urllib3", "jmespath", "dateutil", "six")
# The stage whose template the harness deploys: OpenAI embeddings and model, an API key in Secrets Manager.
STAGE = "prod"
STAGE_CONTEXT = {"prod": {"alarm_email": "alarms@example.com"}}  # prod refuses to synthesize without it
LAMBDA_TASK_ROOT = "/var/task"
RUNTIME_CACHE = REPO_ROOT / ".local" / "lambda-runtime"
OPENAI_KEY = "sk-artifact-test"


class HarnessError(RuntimeError):
    """The harness cannot run the artifacts as asked (no CPython 3.12, an unknown template reference, ...)."""


def python312() -> str:
    from infra.bundling import find_python312

    found = find_python312()
    if found is None:
        raise HarnessError(
            "no CPython 3.12 found: the Lambda artifacts run on 3.12 only (binary wheels for cp312). Install it "
            "(pyenv install 3.12, or the distribution's python3.12) or point RAG_LAYER_PYTHON312 at one"
        )
    return found


# --- the artifacts ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FunctionSpec:
    """One Lambda function of the synthesized template."""

    name: str  # POWERTOOLS_SERVICE_NAME: ingest, query, migrate, backfill-segment, ...
    logical_id: str
    handler: str  # module.function, Lambda's handler setting
    asset: Path  # what Lambda unpacks into /var/task
    environment: dict[str, Any]  # template values: strings, or CloudFormation references
    memory_mb: int
    timeout_s: int

    @property
    def handler_function(self) -> str:
        return self.handler.rpartition(".")[2]


@dataclass(frozen=True)
class Artifacts:
    python: str
    layer: Path  # the layer's python/ (/opt/python in Lambda)
    runtime: Path  # boto3 and its dependencies, as Lambda's runtime ships them
    functions: dict[str, FunctionSpec]
    template: dict[str, Any]

    def resource_properties(self, type_: str) -> dict[str, Any]:
        [found] = [r["Properties"] for r in self.template["Resources"].values() if r["Type"] == type_]
        return dict(found)


def build_artifacts(workdir: Path, *, stage: str = STAGE, context: dict[str, Any] | None = None) -> Artifacts:
    """Build (or reuse) the layer, synthesize ``stage`` (``context``: ``-c`` values) and collect each function's
    asset, handler and environment."""
    python = python312()
    layer = cached_layer() / "python"
    template, outdir = synthesize(stage, workdir / "cdk.out", context)
    functions = function_specs(template, outdir, workdir / "bundled")
    return Artifacts(python, layer, runtime_folder(), functions, template)


def cached_layer() -> Path:
    spec = importlib.util.spec_from_file_location("layer_size", REPO_ROOT / "bench" / "layer_size.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    import sys

    sys.modules.setdefault(spec.name, module)  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return Path(module.cached_layer())


def synthesize(stage: str, outdir: Path, extra: dict[str, Any] | None = None) -> tuple[dict[str, Any], Path]:
    """The CDK app's template for ``stage``, assets staged but not bundled (no pip, no Docker)."""
    from infra import node  # noqa: F401  (JSII_NODE before aws_cdk)

    node.use_wheel_node()
    import aws_cdk as cdk

    from infra.stack import build

    context = {"aws:cdk:bundling-stacks": [], **STAGE_CONTEXT.get(stage, {}), **(extra or {})}
    app = cdk.App(context=context, outdir=str(outdir))
    stack = build(app, stage)
    template = app.synth().get_stack_by_name(stack.stack_name).template
    return template, outdir


def function_specs(template: dict[str, Any], outdir: Path, bundled: Path) -> dict[str, FunctionSpec]:
    """The application's functions (those on the layer), each with the asset the template points at."""
    from infra.bundling import CopyBundler
    from infra.constructs.migrations import ASSET_FILES

    specs = {}
    for logical_id, resource in template["Resources"].items():
        properties = resource["Properties"]
        if resource["Type"] != "AWS::Lambda::Function" or not properties.get("Layers"):
            continue
        environment = properties["Environment"]["Variables"]
        name = environment["POWERTOOLS_SERVICE_NAME"]
        staged = outdir / f"asset.{properties['Code']['S3Key'].removesuffix('.zip')}"
        if staged.is_dir():
            asset = staged
        elif name == "migrate":  # bundled: its CopyBundler makes the asset (skipped at this synth)
            asset = bundled / name
            shutil.rmtree(asset, ignore_errors=True)
            asset.mkdir(parents=True)
            CopyBundler(ASSET_FILES).try_bundle(str(asset), image=None)
        else:
            raise HarnessError(f"{logical_id}: no staged asset for {properties['Code']} and no bundler known for it")
        specs[name] = FunctionSpec(
            name, logical_id, properties["Handler"], asset, environment, properties["MemorySize"], properties["Timeout"]
        )
    return specs


def runtime_folder() -> Path:
    """boto3 and the packages it needs, as Lambda's python3.12 runtime provides them: compiled for 3.12.

    Hard-linked copies of the venv's (any bytecode there is for the venv's Python), precompiled like the layer,
    kept under .local/lambda-runtime/ per set of versions.
    """
    import hashlib
    import sys

    from infra.bundling import precompile

    sources = {}
    for name in RUNTIME_MODULES:
        found = importlib.util.find_spec(name)
        if found is None or found.origin is None:
            raise HarnessError(f"{name} is not installed in this environment: the harness stands it in for Lambda's")
        origin = Path(found.origin)
        sources[name] = origin.parent if origin.name == "__init__.py" else origin
    stamp = hashlib.sha256(json.dumps([sys.version, *map(str, sources.values())]).encode())
    for name in ("boto3", "botocore", "s3transfer", "urllib3", "jmespath", "python-dateutil", "six"):
        stamp.update(importlib.metadata.version(name).encode())
    folder = RUNTIME_CACHE / stamp.hexdigest()[:16]
    if not folder.is_dir():
        partial = folder.with_suffix(f".partial-{os.getpid()}")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        for source in sources.values():
            if source.is_dir():
                shutil.copytree(
                    source, partial / source.name, copy_function=os.link, ignore=shutil.ignore_patterns("__pycache__")
                )
            else:
                os.link(source, partial / source.name)
        precompile(partial)
        try:
            partial.rename(folder)
        except OSError:  # built by another process meanwhile
            shutil.rmtree(partial, ignore_errors=True)
    return folder


# --- the services a deployed stack talks to ----------------------------------------------------------------------


class XRayDaemon:
    """Collects the segments the X-Ray SDK sends over UDP (as the daemon beside each Lambda does)."""

    def __init__(self) -> None:
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.socket.bind(("127.0.0.1", 0))
        self.socket.settimeout(0.2)
        self.segments: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._receive, daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.socket.getsockname()[1]}"

    def _receive(self) -> None:
        while not self._stop.is_set():
            try:
                data = self.socket.recv(65_536)
            except TimeoutError:
                continue
            _, _, document = data.decode().partition("\n")  # {"format": "json", "version": 1}\n<segment>
            self.segments.append(json.loads(document))

    def segments_of(self, trace_root: str, *, wait_s: float = 2.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + wait_s
        while True:
            found = [s for s in self.segments if s.get("trace_id") == trace_root]
            if found or time.monotonic() > deadline:
                return found
            time.sleep(0.05)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.socket.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Database:
    server_url: str  # the session's server, as its administrator
    name: str
    app_user: str
    app_password: str

    @property
    def admin_url(self) -> str:
        from psycopg.conninfo import make_conninfo

        return make_conninfo(self.server_url, dbname=self.name)

    @property
    def params(self) -> dict[str, Any]:
        from psycopg.conninfo import conninfo_to_dict

        return conninfo_to_dict(self.server_url)

    def iam_url(self) -> str:
        """What RAG_DATABASE_IAM_URL holds in AWS (user, host, port, database; the token is the password)."""
        params = self.params
        return f"postgresql://{self.app_user}@{params.get('host', '127.0.0.1')}:{params.get('port', 5432)}/{self.name}?sslmode=disable"

    def admin_secret(self) -> dict[str, Any]:
        """Like RDS's generated secret: no dbname (RAG_DATABASE_NAME names it)."""
        params = self.params
        return {
            "engine": "postgres", "host": params.get("host", "127.0.0.1"), "port": int(params.get("port", 5432)),
            "username": params.get("user", "postgres"), "password": params.get("password") or "not-checked-locally",
            "sslmode": "disable", "dbInstanceIdentifier": "artifact-test",
        }  # fmt: skip

    def execute(self, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            cursor = conn.execute(statement, params or None)
            return cursor.fetchall() if cursor.description else []


@contextmanager
def fresh_database(server_url: str) -> Iterator[Database]:
    """An empty database (the migrator creates the schema) and a role name of its own, both dropped afterwards."""
    import psycopg

    suffix = uuid.uuid4().hex[:10]
    database = Database(server_url, f"rag_artifact_{suffix}", f"rag_app_{suffix}", secrets.token_urlsafe(16))
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{database.name}"')
    try:
        yield database
    finally:
        with psycopg.connect(server_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{database.name}" WITH (FORCE)')
            admin.execute(f'DROP ROLE IF EXISTS "{database.app_user}"')


@dataclass
class Services:
    moto_url: str
    model: Any  # ScriptedModel
    bedrock: Any  # FakeBedrock
    xray: XRayDaemon
    database: Database
    secrets: dict[str, str]  # template reference (environment variable) -> secret ARN
    bucket: str
    queue_url: str
    queue_arn: str
    state_machine_arn: str = ""  # the backfill machine the ingest function starts (moto runs none of its states)
    reembed_bucket: str = ""  # the re-embedding's manifests and results (Bedrock's batch jobs: the fake)

    def client(self, service: str) -> Any:
        import boto3

        return boto3.client(service, region_name=REGION, endpoint_url=self.moto_url)


@contextmanager
def running_services(server_url: str) -> Iterator[Services]:
    """moto, the fake model endpoints, the X-Ray daemon and a fresh database, set up as the stack sets them up."""
    from moto.server import ThreadedMotoServer

    from tests.artifact.fake_bedrock import FakeBedrock
    from tests.artifact.scripted_model import ScriptedModel

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # moto's server logs every request otherwise
    port = free_port()
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    moto.start()
    xray = XRayDaemon()
    try:
        with ScriptedModel() as model, FakeBedrock() as bedrock, fresh_database(server_url) as database:
            services = Services(f"http://127.0.0.1:{port}", model, bedrock, xray, database, {}, "", "", "")
            set_up_aws(services)
            yield services
    finally:
        xray.close()
        moto.stop()


def set_up_aws(services: Services) -> None:
    """The stack's AWS side in moto: the versioned documents bucket notifying the ingest queue (with its DLQ)
    for both key prefixes, the database's two secrets, the OpenAI key's secret and the backfill state machine
    (a stand-in: the stage functions are invoked by the tests, its executions stay RUNNING)."""
    from infra.constructs.ingest import DOCUMENT_PREFIXES
    from infra.stages import STAGES

    s3, sqs, secretsmanager = services.client("s3"), services.client("sqs"), services.client("secretsmanager")
    services.bucket = f"meeting-rag-documents-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=services.bucket)
    s3.put_bucket_versioning(Bucket=services.bucket, VersioningConfiguration={"Status": "Enabled"})
    dlq = sqs.create_queue(QueueName="meeting-rag-dead-letters")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    services.queue_url = sqs.create_queue(
        QueueName="meeting-rag-changes",
        Attributes={
            "VisibilityTimeout": "720",
            "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "5"}),
        },
    )["QueueUrl"]
    services.queue_arn = sqs.get_queue_attributes(QueueUrl=services.queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    s3.put_bucket_notification_configuration(
        Bucket=services.bucket,
        NotificationConfiguration={
            "QueueConfigurations": [
                {"QueueArn": services.queue_arn, "Events": [event],
                 "Filter": {"Key": {"FilterRules": [{"Name": "prefix", "Value": prefix}]}}}
                for prefix in DOCUMENT_PREFIXES for event in ("s3:ObjectCreated:*", "s3:ObjectRemoved:*")
            ]
        },
    )  # fmt: skip
    database = services.database
    admin = secretsmanager.create_secret(Name="meeting-rag/database/admin", SecretString=json.dumps(database.admin_secret()))
    app = secretsmanager.create_secret(
        Name="meeting-rag/database/app",
        SecretString=json.dumps({"username": database.app_user, "password": database.app_password}),
    )
    services.secrets = {"RAG_DATABASE_SECRET_ARN": admin["ARN"], "RAG_APP_DATABASE_SECRET_ARN": app["ARN"]}
    if name := STAGES[STAGE].openai_api_key_secret_name:
        secretsmanager.create_secret(Name=name, SecretString=OPENAI_KEY)
    services.reembed_bucket = f"meeting-rag-reembed-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=services.reembed_bucket)
    services.bedrock.s3 = s3  # the fake's batch jobs read manifests and write results here, as Bedrock's do
    services.state_machine_arn = services.client("stepfunctions").create_state_machine(
        name="meeting-rag-backfill",
        definition=json.dumps({"StartAt": "Stand-in", "States": {"Stand-in": {"Type": "Pass", "End": True}}}),
        roleArn=f"arn:aws:iam::{ACCOUNT}:role/meeting-rag-backfill",
    )["stateMachineArn"]


# --- one function's execution environment ------------------------------------------------------------------------


@dataclass(frozen=True)
class Invocation:
    ok: bool
    result: Any
    error: dict[str, str] | None
    ms: float
    trace_root: str
    modules: list[str] = field(default_factory=list)

    def value(self) -> Any:
        """The handler's return value; an unhandled error fails with the function's own traceback."""
        if not self.ok:
            assert self.error is not None
            raise AssertionError(f"the function raised {self.error['type']}: {self.error['message']}\n{self.error['traceback']}")
        return self.result


def lambda_environment(artifacts: Artifacts, services: Services, function: FunctionSpec) -> dict[str, str]:
    """The function's environment in AWS (the runtime's variables and the template's), pointed at the local services.

    Template references are resolved to the local resources they stand for; ``/var/task`` is the asset's folder;
    an unknown reference fails loudly (a new one needs its local stand-in here).
    """
    resolved = {
        "RAG_DATABASE_IAM_URL": services.database.iam_url(),
        "RAG_BACKFILL_STATE_MACHINE_ARN": services.state_machine_arn,
        "RAG_UPLOAD_BUCKET": services.bucket,  # the documents bucket: the query function presigns uploads to it
        "RAG_REEMBED_BUCKET": services.reembed_bucket,
        "RAG_REEMBED_ROLE_ARN": f"arn:aws:iam::{ACCOUNT}:role/meeting-rag-reembed-jobs",
        **services.secrets,
    }
    environment = {}
    for key, value in function.environment.items():
        if isinstance(value, str):
            environment[key] = value.replace(LAMBDA_TASK_ROOT, str(function.asset))
        elif key in resolved:
            environment[key] = resolved[key]
        else:
            raise HarnessError(
                f"{function.logical_id}: environment {key} is a template reference the harness cannot stand in for: {value}"
            )
    if "RAG_DATABASE_NAME" in environment:
        environment["RAG_DATABASE_NAME"] = services.database.name  # the test's database, not the stack's
    name = f"MeetingRag-{STAGE}-{function.logical_id}"
    return {
        # Lambda's own variables (python3.12 on Amazon Linux 2023)
        "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "en_US.UTF-8", "TZ": ":UTC",
        "AWS_REGION": REGION, "AWS_DEFAULT_REGION": REGION, "AWS_EXECUTION_ENV": "AWS_Lambda_python3.12",
        "AWS_LAMBDA_FUNCTION_NAME": name, "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory_mb), "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{name}", "AWS_LAMBDA_LOG_STREAM_NAME": "2026/11/25/[$LATEST]0123abcd",
        "LAMBDA_TASK_ROOT": str(function.asset), "_HANDLER": function.handler,
        "AWS_XRAY_DAEMON_ADDRESS": services.xray.address, "AWS_XRAY_CONTEXT_MISSING": "LOG_ERROR",
        "AWS_ACCESS_KEY_ID": "ASIAARTIFACTTEST", "AWS_SECRET_ACCESS_KEY": "artifact-test", "AWS_SESSION_TOKEN": "artifact-test",
        # The path: /var/task, /opt/python, the runtime's packages (Lambda's order); bytecode only from the layer.
        "PYTHONPATH": os.pathsep.join([str(function.asset), str(artifacts.layer), str(artifacts.runtime)]),
        "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1",
        **environment,
        # The endpoints AWS provides, here local: every AWS API to moto, Bedrock (runtime, control plane) and OpenAI to the fakes.
        "AWS_ENDPOINT_URL": services.moto_url, "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": services.bedrock.url,
        "AWS_ENDPOINT_URL_BEDROCK": services.bedrock.url,
        "OPENAI_BASE_URL": services.model.base_url,
    }  # fmt: skip


class LambdaProcess:
    """A fresh execution environment of one function: imports its handler, then takes events one at a time."""

    def __init__(self, artifacts: Artifacts, function: FunctionSpec, environment: dict[str, str], log: Path):
        self.function = function
        self.log = log
        self._log_file: TextIO = log.open("w")
        started = time.perf_counter()
        self.process = subprocess.Popen(
            [artifacts.python, "-S", "-P", str(BOOTSTRAP)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log_file, env=environment,
            cwd=function.asset, text=True, bufsize=1,
        )  # fmt: skip
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.init: dict[str, Any] = json.loads(self._next_line(120))
        self.init["process_ms"] = round((time.perf_counter() - started) * 1000, 1)  # interpreter start + import
        self.invocations: list[Invocation] = []
        if not self.init["ready"]:
            error = self.init["error"]
            raise AssertionError(
                f"{function.name}: importing {function.handler} failed: {error['type']}: {error['message']}\n{error['traceback']}"
            )

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put("")

    def _next_line(self, timeout_s: float) -> str:
        try:
            line = self._lines.get(timeout=timeout_s)
        except queue.Empty:
            self.close()
            raise AssertionError(f"{self.function.name}: no answer within {timeout_s} s; its log:\n{self.log_tail()}") from None
        if not line:
            raise AssertionError(
                f"{self.function.name}: the process ended (exit {self.process.wait()}); its log:\n{self.log_tail()}"
            )
        return line

    def invoke(self, event: Any, *, timeout_s: float | None = None, modules: bool = False) -> Invocation:
        limit = timeout_s or float(self.function.timeout_s)
        request = {"handler": self.function.handler_function, "event": event, "timeout_ms": int(limit * 1000), "modules": modules}
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        reply = json.loads(self._next_line(limit + 30))
        invocation = Invocation(
            reply["ok"], reply.get("result"), reply.get("error"), reply["ms"], reply["trace_root"], reply.get("modules", [])
        )
        self.invocations.append(invocation)
        return invocation

    def log_tail(self, chars: int = 6000) -> str:
        self._log_file.flush()
        return self.log.read_text(errors="replace")[-chars:]

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log_file.close()


@dataclass
class ColdStart:
    function: str
    import_ms: float  # the handler module's import, measured inside the process
    process_ms: float  # from starting the interpreter to the handler imported, measured outside
    first_request_ms: float
    first_request_ok: bool


@dataclass
class Stack:
    """The artifacts and the services together: a deployed stack, run locally."""

    artifacts: Artifacts
    services: Services
    logs: Path
    cold_starts: list[ColdStart] = field(default_factory=list)
    inits: dict[str, dict[str, Any]] = field(default_factory=dict)  # label -> what each process reported after its import

    @contextmanager
    def function(
        self, name: str, *, environment: dict[str, str] | None = None, label: str | None = None
    ) -> Iterator[LambdaProcess]:
        """A fresh process of function ``name`` (its environment as deployed, plus ``environment``)."""
        spec = self.artifacts.functions[name]
        env = {**lambda_environment(self.artifacts, self.services, spec), **(environment or {})}
        label = label or name
        process = LambdaProcess(self.artifacts, spec, env, self.logs / f"{label}-{len(self.inits)}.log")
        self.inits[label] = process.init
        try:
            yield process
        finally:
            process.close()
            if process.invocations:
                first = process.invocations[0]
                self.cold_starts.append(
                    ColdStart(label, process.init["import_ms"], process.init["process_ms"], first.ms, first.ok)
                )


def migration_properties(stack: Stack) -> dict[str, Any]:
    """What CloudFormation sends the migrator's custom resource (its properties but the provider's token)."""
    properties = stack.artifacts.resource_properties("Custom::MeetingRagMigrations")
    return {key: value for key, value in properties.items() if key != "ServiceToken"}


def create_schema(stack: Stack) -> None:
    """The deploy's migration: the custom resource's Create through the migrator function."""
    with stack.function("migrate") as migrate:
        migrate.invoke(cloudformation_event("Create", migration_properties(stack))).value()


# --- events, in the shapes AWS sends them --------------------------------------------------------------------------


def load_event(name: str) -> dict[str, Any]:
    return json.loads((EVENTS / name).read_text())


def sqs_event(messages: list[dict[str, Any]], queue_arn: str) -> dict[str, Any]:
    """What Lambda's SQS event source hands the function for messages it received (ReceiveMessage's fields)."""
    kept = ("ApproximateReceiveCount", "SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp")
    return {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": {k: v for k, v in m.get("Attributes", {}).items() if k in kept},
                "messageAttributes": {},
                "md5OfBody": m["MD5OfBody"],
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": REGION,
            }  # fmt: skip
            for m in messages
        ]
    }


def receive_all(services: Services, count: int, *, wait_s: float = 10.0) -> list[dict[str, Any]]:
    """``count`` messages from the ingest queue (received as the event source receives them)."""
    sqs = services.client("sqs")
    messages: list[dict[str, Any]] = []
    deadline = time.monotonic() + wait_s
    while len(messages) < count and time.monotonic() < deadline:
        reply = sqs.receive_message(
            QueueUrl=services.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0,
            MessageSystemAttributeNames=["All"], MessageAttributeNames=["All"],
        )  # fmt: skip
        messages += reply.get("Messages", [])
    assert len(messages) == count, f"expected {count} notifications on the queue, got {[m['Body'][:200] for m in messages]}"
    return messages


def http_event(
    method: str, path: str, body: Any = None, *, tenant: str = "acme", query: dict[str, str] | None = None
) -> dict[str, Any]:
    """An HTTP API (payload 2.0) request through the JWT authorizer, as API Gateway sends it to the function."""
    from urllib.parse import urlencode

    event = copy.deepcopy(load_event("http_api_jwt.json"))
    route = "/mcp" if path == "/mcp" else "/v1/{proxy+}"
    event["routeKey"] = event["requestContext"]["routeKey"] = f"{method} {route}"
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["requestContext"]["http"]["method"] = method
    event["requestContext"]["requestId"] = uuid.uuid4().hex[:16] + "="
    event["requestContext"]["authorizer"]["jwt"]["claims"]["tenant"] = tenant
    if route == "/mcp":
        event.pop("pathParameters", None)
    else:
        event["pathParameters"] = {"proxy": path.removeprefix("/v1/")}
    event["rawQueryString"] = urlencode(query or {})
    if query:
        event["queryStringParameters"] = dict(query)
    raw = "" if body is None else body if isinstance(body, str) else json.dumps(body)
    if raw:
        event["body"] = raw
    else:
        event.pop("body", None)
        event["headers"].pop("content-type", None)
    event["headers"]["content-length"] = str(len(raw.encode()))
    return event


def mcp_event(message: dict[str, Any], *, protocol_version: str | None = None, tenant: str = "acme") -> dict[str, Any]:
    """A Streamable HTTP POST to /mcp, with the headers an MCP client sends."""
    event = http_event("POST", "/mcp", message, tenant=tenant)
    event["headers"]["accept"] = "application/json, text/event-stream"
    if protocol_version:
        event["headers"]["mcp-protocol-version"] = protocol_version
    return event


def cloudformation_event(request: str, properties: dict[str, Any], *, old: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the CDK Provider framework passes the migrator for a custom resource request."""
    stack_id = f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/MeetingRag-{STAGE}/0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9"
    token = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:MeetingRag-{STAGE}-MigrationsProviderframeworkonEvent"
    event = {
        "RequestType": request, "ServiceToken": token, "ResponseURL": "https://cloudformation-custom-resource-response.example/",
        "StackId": stack_id, "RequestId": str(uuid.uuid4()), "LogicalResourceId": "MigrationsSchema",
        "ResourceType": "Custom::MeetingRagMigrations", "ResourceProperties": {"ServiceToken": token, **properties},
    }  # fmt: skip
    if request != "Create":
        event["PhysicalResourceId"] = "meeting-rag-schema"
    if old is not None:
        event["OldResourceProperties"] = {"ServiceToken": token, **old}
    return event
