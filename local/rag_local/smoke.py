"""A smoke check of a running stack, as its first user would do it: upload, wait, search, ask, MCP, delete.

``rag smoke`` (``rag_local.commands.smoke``) runs it against a deployed stack (its CloudFormation outputs
name the bucket, the API URLs and the tenant uploader roles) or against the local stack of ``rag up``.
It uploads ``SMOKE_TRANSCRIPT`` to a project of its own (``smoke-<random>``: nothing of a user's collides
with it, and the project disappears with its one document), so every check is scoped to that project.
Each step becomes a row of a table; a step whose input is missing is skipped, not failed a second time,
and the upload is deleted whatever failed before.
"""

from __future__ import annotations

import functools
import json
import re
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol
from urllib.parse import quote, urlsplit

# A transcript in the "Speaker (Role): text" form, with a phrase no user's meeting is likely to hold.
SMOKE_TRANSCRIPT = """\
Ines (Operations): This meeting checks that the knowledge service answers after a deploy.
Tomas (Engineering): We agreed to call the release checklist the heron lantern protocol.
Ines (Operations): So the decision is: every deploy runs the heron lantern protocol before customers upload anything.
Tomas (Engineering): The heron lantern protocol takes about two minutes from upload to answer.
Ines (Operations): I will add the heron lantern protocol to the runbook today.
"""
PHRASE = "heron lantern protocol"
SEARCH_QUERY = "What is the heron lantern protocol?"
ASK_QUESTION = "What did the team decide about the heron lantern protocol?"
SEARCH_MODES = ("semantic", "keyword", "hybrid")
STEP_NAMES = ("api", "upload", "ingest", *(f"search {mode}" for mode in SEARCH_MODES), "context", "ask", "mcp tools/list",
              "mcp search", "delete")  # fmt: skip
OBJECT_NAME = "smoke-check.txt"
MCP_PROTOCOL_VERSION = "2025-06-18"
HTTP_TIMEOUT_SECONDS = 60  # above API Gateway's 30 s integration limit: the API answers first
# How infra/stack.py describes each tenant uploader's RoleArn output (its key is a CDK-generated logical id).
UPLOADER_DESCRIPTION = re.compile(r"^Uploader role of tenant (?P<tenant>\S+): writes (?P<prefixes>.+)$")
DEFAULT_TENANT_PREFIX = "projects/"

Status = Literal["PASS", "FAIL", "SKIP"]
Progress = Callable[[str], None]


class SmokeSetupError(Exception):
    """The check cannot start (no such stack, an output or a token missing); the message says what to do."""


class StepFailed(Exception):
    """A step's check did not hold; the message is the table's detail."""


# --- the stack's outputs ---------------------------------------------------------------


@dataclass(frozen=True)
class UploaderRole:
    tenant_id: str
    role_arn: str
    prefixes: tuple[str, ...]  # what the role may write: tenants/<tenant_id>/, and projects/ for the default tenant


@dataclass(frozen=True)
class StackOutputs:
    bucket_name: str
    api_url: str
    service_api_url: str | None = None
    ingest_log_group: str | None = None
    uploader_roles: tuple[UploaderRole, ...] = ()

    def uploader_for(self, tenant_id: str | None) -> UploaderRole | None:
        """The role that writes ``tenant_id``'s prefix; for None (the short ``projects/`` form) the default tenant's."""
        for role in self.uploader_roles:
            if (tenant_id is None and DEFAULT_TENANT_PREFIX in role.prefixes) or role.tenant_id == tenant_id:
                return role
        return None


def read_stack_outputs(cloudformation: Any, stack_name: str) -> StackOutputs:
    """The outputs of ``stack_name`` (``describe_stacks``) that the smoke check uses."""
    from botocore.exceptions import ClientError

    try:
        stacks = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    except ClientError as exc:
        region = cloudformation.meta.region_name
        raise SmokeSetupError(f"cannot read stack {stack_name} in {region}: {exc.response['Error']['Message']}") from exc
    outputs = stacks[0].get("Outputs", [])
    values = {o["OutputKey"]: o["OutputValue"] for o in outputs}
    missing = [key for key in ("BucketName", "ApiUrl") if key not in values]
    if missing:
        status = stacks[0].get("StackStatus", "unknown")
        raise SmokeSetupError(f"stack {stack_name} ({status}) has no output {' or '.join(missing)}: is it a meeting-rag stack?")
    roles = []
    for output in outputs:
        match = UPLOADER_DESCRIPTION.match(output.get("Description") or "")
        if match:
            prefixes = tuple(p.strip() for p in match["prefixes"].split(","))
            roles.append(UploaderRole(match["tenant"], output["OutputValue"], prefixes))
    return StackOutputs(
        bucket_name=values["BucketName"],
        api_url=values["ApiUrl"],
        service_api_url=values.get("ServiceApiUrl"),
        ingest_log_group=values.get("IngestLogGroupName"),
        uploader_roles=tuple(sorted(roles, key=lambda r: r.tenant_id)),
    )


def assumed_role_session(session: Any, role_arn: str) -> Any:
    """A boto3 session with the credentials of ``role_arn`` (an STS AssumeRole by ``session``'s caller)."""
    import boto3

    credentials = session.client("sts").assume_role(RoleArn=role_arn, RoleSessionName="rag-smoke", DurationSeconds=900)
    c = credentials["Credentials"]
    return boto3.Session(
        aws_access_key_id=c["AccessKeyId"], aws_secret_access_key=c["SecretAccessKey"], aws_session_token=c["SessionToken"],
        region_name=session.region_name,
    )  # fmt: skip


# --- HTTP to the API -------------------------------------------------------------------


class Auth(Protocol):
    def headers(self, method: str, url: str, headers: dict[str, str], body: bytes) -> dict[str, str]:
        """The request's headers with its credentials added."""
        ...


@dataclass(frozen=True)
class BearerToken:
    """A JWT (the API's ``ApiUrl``) or a local API key: ``Authorization: Bearer <token>``."""

    token: str

    def headers(self, method: str, url: str, headers: dict[str, str], body: bytes) -> dict[str, str]:
        return {**headers, "Authorization": f"Bearer {self.token}"}


@dataclass(frozen=True)
class SigV4:
    """IAM: each request signed with SigV4 for ``execute-api`` (the API's ``ServiceApiUrl``)."""

    credentials: Any  # botocore credentials
    region: str

    def headers(self, method: str, url: str, headers: dict[str, str], body: bytes) -> dict[str, str]:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        request = AWSRequest(method=method, url=url, data=body, headers=headers)
        SigV4Auth(self.credentials, "execute-api", self.region).add_auth(request)
        return dict(request.headers.items())


def execute_api_region(url: str) -> str | None:
    """The region of an ``https://<id>.execute-api.<region>.amazonaws.com`` URL (None for another host)."""
    match = re.match(r"^[^.]+\.execute-api\.([a-z0-9-]+)\.amazonaws\.com", urlsplit(url).hostname or "")
    return match[1] if match else None


@dataclass(frozen=True)
class HttpReply:
    status: int
    headers: dict[str, str]  # names lower-cased
    body: bytes

    def text(self, limit: int = 300) -> str:
        text = self.body.decode("utf-8", errors="replace").strip()
        return text if len(text) <= limit else text[:limit] + "…"


class ApiClient:
    """JSON over HTTP to the query API at ``base_url`` (no trailing slash needed), authenticated by ``auth``."""

    def __init__(self, base_url: str, auth: Auth, timeout: float = HTTP_TIMEOUT_SECONDS) -> None:
        self.base_url = base_url.rstrip("/")
        self.auth = auth
        self.timeout = timeout

    def request(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> HttpReply:
        url = f"{self.base_url}{path}"
        data = b"" if body is None else json.dumps(body).encode()
        sent = {**({"Content-Type": "application/json"} if body is not None else {}), **(headers or {})}
        request = urllib.request.Request(
            url, data=data or None, headers=self.auth.headers(method, url, sent, data), method=method
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return HttpReply(response.status, {k.lower(): v for k, v in response.headers.items()}, response.read())
        except urllib.error.HTTPError as exc:
            return HttpReply(exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read())
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            raise StepFailed(f"cannot reach {url}: {getattr(exc, 'reason', exc)}") from exc

    def call(self, method: str, path: str, body: Any = None, *, allow: tuple[int, ...] = ()) -> Any:
        """The JSON of a 2xx reply (None for a status in ``allow``); any other status fails the step."""
        reply = self.request(method, path, body)
        if reply.status in allow:
            return None
        if not 200 <= reply.status < 300:
            raise StepFailed(f"{method} {path}: HTTP {reply.status}: {reply.text()}")
        try:
            return json.loads(reply.body)
        except ValueError as exc:
            raise StepFailed(f"{method} {path}: HTTP {reply.status} with a body that is not JSON: {reply.text()}") from exc


# --- the check ----------------------------------------------------------------------------


@dataclass
class Step:
    name: str
    status: Status
    detail: str
    seconds: float = 0.0


@dataclass(frozen=True)
class Upload:
    """Where the transcript goes and with what: ``s3`` is a client with the uploader's credentials."""

    s3: Any
    bucket: str
    key_prefix: str  # "projects/" (the default tenant) or "tenants/<tenant_id>/projects/"
    uploader: str  # who uploads, for the table: a role ARN or "your credentials"


@dataclass
class SmokeCheck:
    api: ApiClient
    upload: Upload
    timeout: float = 300.0  # the bound on each wait: for the ingest, for the delete to reach the API
    poll_seconds: float = 2.0
    progress: Progress = lambda message: None  # noqa: E731 - a default that prints nothing
    ingest_hint: str = ""  # where to look when the ingest fails (e.g. the ingest log group)
    project_id: str = field(default_factory=lambda: f"smoke-{uuid.uuid4().hex[:12]}")
    document_id: str | None = field(default=None, init=False)  # once the API lists the upload
    steps: list[Step] = field(default_factory=list, init=False)
    _mcp_headers: dict[str, str] | None = field(default=None, init=False, repr=False)  # after MCP initialize

    @property
    def key(self) -> str:
        return f"{self.upload.key_prefix}{self.project_id}/{OBJECT_NAME}"

    @property
    def uri(self) -> str:
        return f"s3://{self.upload.bucket}/{self.key}"

    def run(self) -> list[Step]:
        """Every step in order; the upload is deleted whatever happened after it (also on Ctrl-C)."""
        if not self._step("api", self._check_api):
            for name in STEP_NAMES[1:]:
                self._skip(name, "the API check failed")
            return self.steps
        uploaded = self._step("upload", self._upload)
        try:
            ingested = uploaded and self._step("ingest", self._wait_ingested)
            if not uploaded:
                self._skip("ingest", "nothing was uploaded")
            for mode in SEARCH_MODES:
                self._step_after(ingested, f"search {mode}", functools.partial(self._search, mode))
            self._step_after(ingested, "context", self._context)
            self._step_after(ingested, "ask", self._ask)
            self._step("mcp tools/list", self._mcp_tools)
            self._step_after(ingested, "mcp search", self._mcp_search)
        finally:
            if uploaded:
                self._step("delete", self._delete)
            else:
                self._skip("delete", "nothing was uploaded")
        return self.steps

    # -- bookkeeping

    def _step(self, name: str, check: Callable[[], str]) -> bool:
        started = time.monotonic()
        status: Status
        try:
            detail, status = check(), "PASS"
        except StepFailed as exc:
            detail, status = str(exc), "FAIL"
        except Exception as exc:  # a crash of one step must not stop the others, nor the delete
            detail, status = f"{type(exc).__name__}: {exc}", "FAIL"
        self.steps.append(Step(name, status, detail, time.monotonic() - started))
        return status == "PASS"

    def _step_after(self, ready: bool, name: str, check: Callable[[], str]) -> None:
        if ready:
            self._step(name, check)
        else:
            self._skip(name, "the transcript was not ingested")

    def _skip(self, name: str, why: str) -> None:
        self.steps.append(Step(name, "SKIP", why))

    def _wait(self, what: str, done: Callable[[], str | None], hint: str = "") -> str:
        """Poll ``done`` (a detail when done, None otherwise) until it is done or ``timeout`` passes."""
        started = time.monotonic()
        while True:
            detail = done()
            elapsed = time.monotonic() - started
            if detail is not None:
                return f"{detail} after {elapsed:.0f} s"
            if elapsed >= self.timeout:
                raise StepFailed(f"{what}: not done within {self.timeout:.0f} s{'; ' + hint if hint else ''}")
            self.progress(f"{what} ({elapsed:.0f} s of at most {self.timeout:.0f} s)")
            time.sleep(self.poll_seconds)

    def _project(self) -> dict[str, Any] | None:
        return self.api.call("GET", f"/v1/projects/{self.project_id}", allow=(404,))  # type: ignore[no-any-return]

    # -- the steps

    def _check_api(self) -> str:
        projects = self.api.call("GET", "/v1/projects")["projects"]
        return f"GET /v1/projects: authenticated, {len(projects)} projects visible"

    def _upload(self) -> str:
        self.upload.s3.put_object(
            Bucket=self.upload.bucket, Key=self.key, Body=SMOKE_TRANSCRIPT.encode(), ContentType="text/plain; charset=utf-8"
        )
        return f"{self.uri} as {self.upload.uploader}"

    def _wait_ingested(self) -> str:
        def ingested() -> str | None:
            meetings = self.api.call("GET", f"/v1/meetings?project_id={quote(self.project_id)}&limit=10")["meetings"]
            mine = [m for m in meetings if m["source"]["uri"] == self.uri]
            if mine:
                document = self.api.call("GET", f"/v1/documents/{mine[0]['document_id']}")
                if document["status"] == "failed" or not document["chunk_count"]:
                    raise StepFailed(f"{self.uri} is {document['status']}: {document.get('error') or 'no chunks'}")
                self.document_id = document["id"]
                chunks = document["chunk_count"]
                return f"{document['status']}, {chunks} chunk{'' if chunks == 1 else 's'}"
            project = self._project()
            if project is not None and project["document_count"]:
                # A row, but no transcript: the ingest recorded a failure (a failed document has no kind).
                raise StepFailed(
                    f"{self.uri} was recorded without chunks (failed){'; ' + self.ingest_hint if self.ingest_hint else ''}"
                )
            return None

        return self._wait(f"waiting for {self.uri} to be ingested", ingested, self.ingest_hint)

    def _rank(self, results: list[dict[str, Any]], what: str) -> int:
        ranks = [i for i, r in enumerate(results, 1) if r.get("document_id") == self.document_id]
        if not ranks:
            raise StepFailed(f"{what}: {len(results)} results, none from the uploaded transcript")
        return ranks[0]

    def _search(self, mode: str) -> str:
        body = {"query": SEARCH_QUERY, "project_ids": [self.project_id], "mode": mode, "top_k": 5}
        reply = self.api.call("POST", "/v1/search", body)
        rank = self._rank(reply["results"], f"{mode} search")
        hit = reply["results"][rank - 1]
        if PHRASE not in hit["content"].lower():
            raise StepFailed(f"{mode} search found the transcript, but its passage lacks {PHRASE!r}")
        similarity = f", similarity {hit['similarity']:.2f}" if hit["similarity"] is not None else ""
        return f"rank {rank} of {len(reply['results'])}, score {hit['score']:.3f}{similarity}"

    def _context(self) -> str:
        reply = self.api.call("POST", "/v1/context", {"query": SEARCH_QUERY, "project_ids": [self.project_id]})
        rank = self._rank(reply["results"], "context")
        if f"[{rank}]" not in reply["context"]:
            raise StepFailed(f"the context does not number the transcript's passage [{rank}]")
        return f"passage [{rank}] of {len(reply['results'])}, {len(reply['context'])} characters"

    def _ask(self) -> str:
        reply = self.api.call("POST", "/v1/ask", {"question": ASK_QUESTION, "project_ids": [self.project_id]})
        if reply.get("degraded"):
            raise StepFailed(f"the configured model did not answer ({reply['degraded']}); the answer fell back to extractive")
        cited = [c["n"] for c in reply["citations"] if c["document_id"] == self.document_id]
        quoted = [n for n in cited if f"[{n}]" in reply["answer"]]
        if not quoted:
            raise StepFailed(f"{reply['mode']} answer cites none of the transcript: {reply['answer'][:200]!r}")
        return f"{reply['mode']} answer citing {', '.join(f'[{n}]' for n in quoted)}"

    def _mcp(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """One JSON-RPC request to ``/mcp`` (Streamable HTTP); its result, or the step fails."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method}
        if params is not None:
            message["params"] = params
        headers = {"Accept": "application/json, text/event-stream", **(self._mcp_headers or {})}
        reply = self.api.request("POST", "/mcp", message, headers)
        if reply.status != 200:
            raise StepFailed(f"MCP {method}: HTTP {reply.status}: {reply.text()}")
        answer = _json_rpc_reply(reply)
        if "error" in answer:
            raise StepFailed(f"MCP {method}: error {answer['error'].get('code')}: {answer['error'].get('message')}")
        if method == "initialize":
            session = reply.headers.get("mcp-session-id")
            version = answer["result"].get("protocolVersion", MCP_PROTOCOL_VERSION)
            self._mcp_headers = {"MCP-Protocol-Version": version, **({"Mcp-Session-Id": session} if session else {})}
        return answer["result"]

    def _mcp_session(self) -> None:
        if self._mcp_headers is not None:
            return
        self._mcp("initialize", {"protocolVersion": MCP_PROTOCOL_VERSION, "capabilities": {},
                                 "clientInfo": {"name": "rag-smoke", "version": "1"}})  # fmt: skip
        notification = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        reply = self.api.request(
            "POST", "/mcp", notification, {"Accept": "application/json, text/event-stream", **(self._mcp_headers or {})}
        )
        if reply.status != 202:
            raise StepFailed(f"MCP notifications/initialized: expected HTTP 202, got {reply.status}: {reply.text()}")

    def _mcp_tools(self) -> str:
        self._mcp_session()
        names = [tool["name"] for tool in self._mcp("tools/list")["tools"]]
        if "search" not in names:
            raise StepFailed(f"tools/list has no search tool: {', '.join(names) or 'no tools'}")
        return f"{len(names)} tools: {', '.join(names)}"

    def _mcp_search(self) -> str:
        self._mcp_session()
        result = self._mcp(
            "tools/call", {"name": "search", "arguments": {"query": SEARCH_QUERY, "project_ids": [self.project_id]}}
        )
        text = "".join(part.get("text", "") for part in result.get("content", []) if part.get("type") == "text")
        if result.get("isError"):
            raise StepFailed(f"the search tool answered an error: {text[:200]}")
        data = result.get("structuredContent") or json.loads(text)
        rank = self._rank(data.get("results", []), "MCP search")
        return f"tools/call search: the transcript is {data['results'][rank - 1]['cite_as']}"

    def _delete(self) -> str:
        self.upload.s3.delete_object(Bucket=self.upload.bucket, Key=self.key)
        gone = self._wait(f"waiting for {self.uri} to leave the API", lambda: "gone" if self._project() is None else None)
        if self.document_id is None:
            return f"{self.key} deleted (the API never listed it)"
        return f"{self.key} deleted; the document is {gone}"


def _json_rpc_reply(reply: HttpReply) -> dict[str, Any]:
    """The JSON-RPC message of an MCP reply: a JSON body, or the last ``data:`` event of a server-sent-events stream."""
    body = reply.body.decode("utf-8", errors="replace")
    if reply.headers.get("content-type", "").startswith("text/event-stream"):
        events = [line[5:].strip() for line in body.splitlines() if line.startswith("data:")]
        if not events:
            raise StepFailed(f"MCP reply is an event stream without data: {reply.text()}")
        body = events[-1]
    try:
        message = json.loads(body)
    except ValueError as exc:
        raise StepFailed(f"MCP reply is not JSON: {reply.text()}") from exc
    if not isinstance(message, dict):
        raise StepFailed(f"MCP reply is not a JSON-RPC message: {reply.text()}")
    return message


def render_table(steps: list[Step]) -> str:
    """The steps as an aligned table, with a one-line summary."""
    width = max(len(step.name) for step in steps)
    lines = [f"{'step':<{width}}  result  {'time':>7}  detail"]
    for step in steps:
        took = f"{step.seconds:.1f} s" if step.status != "SKIP" else ""
        lines.append(f"{step.name:<{width}}  {step.status:<6}  {took:>7}  {step.detail}")
    counts = {status: sum(step.status == status for step in steps) for status in ("PASS", "FAIL", "SKIP")}
    lines.append(f"{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")
    return "\n".join(lines)
