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
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote

from rag_local.stack_access import ApiClient, HttpReply, StepFailed

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
Status = Literal["PASS", "FAIL", "SKIP"]
Progress = Callable[[str], None]


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
