"""The query API's routes (Powertools APIGatewayHttpResolver, HTTP API payload v2).

Validation comes from the pydantic models; every error leaves as
``{"error": {"code", "message"}}`` with 400/401/404/422 (never a 500 for bad input).
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Annotated, Any, Literal
from uuid import UUID

import psycopg
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)
from aws_lambda_powertools.event_handler.openapi.params import Path, Query

from rag.api.body_checks import body_problem
from rag.api.error_responses import ApiError, error_response, gateway_error
from rag.api.errors import database_failure
from rag.api.identity import Unauthenticated, tenant_of
from rag.api.models.ask import AskRequest, AskResponse
from rag.api.models.catalog import (
    Document,
    Meeting,
    MeetingList,
    Project,
    ProjectBrief,
    ProjectChanges,
    ProjectList,
    Task,
    TaskList,
)
from rag.api.models.fields import PROJECT_PATTERN, TaskStatus
from rag.api.models.search import (
    ContextRequest,
    ContextResponse,
    SearchRequest,
    SearchResponse,
    SearchResult,
    Source,
    search_result,
)
from rag.api.request_connection import request_conn, request_scope
from rag.config import get_settings

API_TITLE = "Meeting RAG query API"
API_VERSION = "1.0.0"

app = APIGatewayHttpResolver(enable_validation=True)


@app.exception_handler(ApiError)
def _api_error(exc: ApiError) -> Response[str]:
    return error_response(exc.status, exc.code, exc.message)


@app.exception_handler(Unauthenticated)
def _unauthenticated(exc: Unauthenticated) -> Response[str]:
    return error_response(401, "unauthenticated", str(exc))


@app.exception_handler(RequestValidationError)
def _invalid(exc: RequestValidationError) -> Response[str]:
    errors = exc.errors()
    if any(e.get("type") == "json_invalid" for e in errors):
        return error_response(400, "invalid_json", "the request body is not valid JSON")
    parts = []
    for error in errors[:5]:
        where = ".".join(str(p) for p in error.get("loc", ()) if p != "body")
        parts.append(f"{where or 'body'}: {error.get('msg')}")
    return error_response(422, "validation_error", "; ".join(parts))


@app.exception_handler(RequestUnsupportedContentType)
def _unsupported_content_type(exc: RequestUnsupportedContentType) -> Response[str]:
    return error_response(400, "unsupported_content_type", "send the body as JSON with Content-Type: application/json")


@app.not_found
def _not_found(exc: Exception) -> Response[str]:
    return error_response(404, "not_found", f"no route {app.current_event.http_method} {app.current_event.path}")


def _tenant() -> str:
    settings = get_settings()
    return tenant_of(app.current_event.raw_event, claim=settings.tenant_claim, iam_tenants=settings.iam_tenants)


@app.exception_handler(psycopg.OperationalError)  # QueryCanceled and PoolTimeout included
def _database_failed(exc: psycopg.OperationalError) -> Response[str]:
    failure = database_failure(exc)
    return error_response(failure.status, failure.code, failure.message)


def _search(request: SearchRequest) -> tuple[list[SearchResult], float]:
    from rag.embedding import get_embedder
    from rag.search.service import run_search

    settings = get_settings()
    ranked, took_ms = run_search(request_conn(), get_embedder(settings), settings, request.search_query(_tenant()))
    return [search_result(type_name, hit) for type_name, hit in ranked], took_ms


@app.post("/v1/search", summary="Semantic, keyword or hybrid search", tags=["search"])
def search(request: SearchRequest) -> SearchResponse:
    results, took_ms = _search(request)
    return SearchResponse(results=results, took_ms=round(took_ms, 2))


@app.post("/v1/context", summary="An LLM-ready context with numbered citations", tags=["search"])
def context(request: ContextRequest) -> ContextResponse:
    from rag.embedding.tokens import count_cl100k
    from rag.search.context import build_context

    results, took_ms = _search(request)
    text, passages = build_context(results, request.max_tokens, count_cl100k)
    cited = [
        p.result.model_copy(
            update={
                "content": p.text,
                "start_char": p.start_char,
                "end_char": p.end_char,
                "start_turn": p.start_turn,
                "end_turn": p.end_turn,
            }
        )  # fmt: skip
        for p in passages
    ]
    return ContextResponse(context=text, results=cited, took_ms=round(took_ms, 2))


@app.get("/v1/projects", summary="The caller's projects with counts", tags=["catalog"])
def projects() -> ProjectList:
    from rag.store.catalog import list_projects

    return ProjectList(projects=[Project(**row) for row in list_projects(request_conn(), _tenant())])


@app.get("/v1/projects/<project_id>", summary="One project", tags=["catalog"])
def project(project_id: Annotated[str, Path(pattern=PROJECT_PATTERN)]) -> Project:
    from rag.store.catalog import get_project

    row = get_project(request_conn(), _tenant(), project_id)
    if row is None:
        raise ApiError(404, "not_found", f"project {project_id!r} not found")
    return Project(**row)


def _with_source(row: dict[str, Any]) -> dict[str, Any]:
    """A catalog row with its ``source_uri``/``source_title`` columns as one ``source`` object."""
    fields = {k: v for k, v in row.items() if k not in ("source_uri", "source_title")}
    return {**fields, "source": Source(uri=row["source_uri"], title=row["source_title"])}


@app.get("/v1/meetings", summary="Meetings, most recent first", tags=["catalog"])
def meetings(
    project_id: Annotated[str | None, Query(pattern=PROJECT_PATTERN)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> MeetingList:
    from rag.store.catalog import list_meetings

    rows = list_meetings(request_conn(), _tenant(), project_id, limit)
    return MeetingList(meetings=[Meeting(**_with_source(row)) for row in rows])


@app.get("/v1/tasks", summary="Extracted tasks, soonest due first, as later meetings left them", tags=["catalog"])
def tasks(
    project_id: Annotated[str | None, Query(pattern=PROJECT_PATTERN)] = None,
    status: Annotated[TaskStatus | None, Query()] = None,
    assignee: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    due_after: Annotated[date | None, Query(description="due on or after this day (YYYY-MM-DD)")] = None,
    due_before: Annotated[date | None, Query(description="due on or before this day (YYYY-MM-DD)")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> TaskList:
    from rag.search.tasks import list_tasks

    _ordered(due_after, due_before, "due_after", "due_before")
    rows = list_tasks(request_conn(), _tenant(), project_id=project_id, status=status, assignee=assignee, limit=limit,
                      due_after=due_after, due_before=due_before)  # fmt: skip
    return TaskList(tasks=[Task(**_with_source(row)) for row in rows])


def _ordered(first: date | None, last: date | None, first_name: str, last_name: str) -> None:
    if first is not None and last is not None and last < first:
        raise ApiError(422, "validation_error", f"{last_name} ({last}) is before {first_name} ({first})")


def _known_project(project_id: str) -> None:
    from rag.store.catalog import get_project

    if get_project(request_conn(), _tenant(), project_id) is None:
        raise ApiError(404, "not_found", f"project {project_id!r} not found")


@app.get(
    "/v1/projects/<project_id>/changes",
    summary="What was decided, superseded, raised, closed, assigned, done, handed over or rescheduled in a date range",
    tags=["catalog"],
)
def project_changes(
    project_id: Annotated[str, Path(pattern=PROJECT_PATTERN)],
    since: Annotated[date, Query(description="first meeting date (inclusive, YYYY-MM-DD)")],
    until: Annotated[date | None, Query(description="last meeting date (inclusive); default: no end")] = None,
    limit: Annotated[int, Query(ge=1, le=200, description="at most this many items per list")] = 50,
) -> ProjectChanges:
    from rag.search.changes import changes_between

    _ordered(since, until, "since", "until")
    _known_project(project_id)
    found = changes_between(request_conn(), _tenant(), project_id, since=since, until=until, limit=limit)
    return ProjectChanges.model_validate({"project_id": project_id, "since": since, "until": until, **found})


BRIEF_FORMATS = {"json": content_types.APPLICATION_JSON, "markdown": "text/markdown; charset=utf-8"}


@app.get(
    "/v1/projects/<project_id>/brief",
    summary="The project as it stands: current decisions, open risks, open tasks by owner, what changed lately",
    tags=["catalog"],
    responses={
        200: {
            "description": "the brief: JSON, or Markdown with ?format=markdown or Accept: text/markdown (every line cited)",
            "content": {"application/json": {"model": ProjectBrief}, "text/markdown": {"schema": {"type": "string"}}},
        }
    },
)
def project_brief(
    project_id: Annotated[str, Path(pattern=PROJECT_PATTERN)],
    days: Annotated[int, Query(ge=1, le=366, description="what changed in meetings of the last N days")] = 14,
    since: Annotated[date | None, Query(description="what changed in meetings from this date on (instead of days)")] = None,
    format: Annotated[
        Literal["json", "markdown"] | None, Query(description="json or markdown (default: from Accept, else json)")
    ] = None,
) -> Response[str]:
    from rag.search.brief import brief_markdown
    from rag.search.brief import project_brief as build_brief

    _known_project(project_id)
    headers = app.current_event.headers or {}
    accept = next((value for name, value in headers.items() if name.lower() == "accept"), "") if format is None else ""
    chosen = format or ("markdown" if "text/markdown" in accept.lower() else "json")
    brief = build_brief(request_conn(), _tenant(), project_id, today=datetime.now(UTC).date(), days=days, since=since)
    body = brief_markdown(brief) if chosen == "markdown" else ProjectBrief(**brief).model_dump_json()
    return Response(status_code=200, content_type=BRIEF_FORMATS[chosen], body=body)


@app.get("/v1/documents/<document_id>", summary="One document: status, error, chunk count, source", tags=["catalog"])
def document(document_id: Annotated[UUID, Path()]) -> Document:
    from rag.store.catalog import get_document

    row = get_document(request_conn(), _tenant(), str(document_id))
    if row is None:
        raise ApiError(404, "not_found", f"document {document_id} not found")
    source = Source(uri=row.pop("source_uri"), title=row["title"])
    return Document(**row, source=source)


@app.post("/v1/ask", summary="A cited answer: the chat model calls this API's tools (or an extractive answer)", tags=["ask"])
def ask(request: AskRequest) -> AskResponse:
    from rag.ask.answer import AskTimeout
    from rag.ask.answer import ask as answer
    from rag.embedding import get_embedder
    from rag.store.catalog import get_project

    settings = get_settings()
    tenant = _tenant()
    conn = request_conn()
    for project_id in request.project_ids:
        if get_project(conn, tenant, project_id) is None:
            raise ApiError(404, "not_found", f"project {project_id!r} not found")
    try:
        return AskResponse(**answer(conn, settings, tenant, request, embedder=get_embedder(settings)))
    except AskTimeout as exc:
        raise ApiError(504, "timeout", f"{exc}; ask a narrower question or retry") from exc


@app.get("/v1/tools", summary="The tools of /v1/ask and /mcp in OpenAI and Anthropic function-calling form", tags=["ask"])
def tools() -> dict[str, Any]:
    from rag.ask.tools import tool_schemas

    return tool_schemas()


MCP_POST_ONLY = (
    "this MCP server is stateless: send JSON-RPC messages with POST (it opens no event stream and has no session to end)"
)


@app.route("/mcp", method=["POST", "GET", "DELETE"], include_in_schema=False)
def mcp() -> Response[str]:  # a raw Response: the MCP SDK writes the body
    """MCP over Streamable HTTP (stateless, JSON responses): the tools of /v1/ask as the caller's tenant."""
    event = app.current_event
    if event.http_method != "POST":
        # Stateless: no event stream to open (GET) and no session to end (DELETE). The specification's answer is
        # 405, given here: the SDK would hold a GET open, waiting to stream, for as long as the client stays.
        refused = error_response(405, "method_not_allowed", MCP_POST_ONLY)
        refused.headers["Allow"] = "POST"
        return refused
    import base64
    from contextlib import nullcontext

    from rag.ask.mcp_server import handle_http
    from rag.ask.tool_context import ToolContext

    settings = get_settings()
    tenant = _tenant()
    raw = event.body or ""
    body = base64.b64decode(raw) if event.is_base64_encoded else raw.encode("utf-8")
    # The connection is borrowed by a tool call only: initialize and tools/list work without the database.
    status, headers, payload = handle_http(
        event.http_method, dict(event.headers or {}), body, lambda: nullcontext(ToolContext(request_conn(), settings, tenant))
    )
    return Response(status_code=status, content_type=headers.pop("content-type", content_types.APPLICATION_JSON),
                    body=payload.decode("utf-8"), headers=headers)  # fmt: skip


@app.get("/v1/openapi.json", summary="This API's OpenAPI document", tags=["meta"], include_in_schema=False)
def openapi() -> Response[str]:  # a raw Response, not a model
    return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=openapi_json())


def openapi_json() -> str:
    return app.get_openapi_json_schema(title=API_TITLE, version=API_VERSION)


PUBLIC_PATHS = {"/v1/openapi.json"}


def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Resolve an API Gateway HTTP API (v2) event; a caller without identity gets 401 before anything else."""
    if event.get("rawPath") not in PUBLIC_PATHS:
        settings = get_settings()
        try:
            tenant_of(event, claim=settings.tenant_claim, iam_tenants=settings.iam_tenants)
        except Unauthenticated as exc:
            return gateway_error(401, "unauthenticated", str(exc))
    if problem := body_problem(event):
        return gateway_error(400, *problem)
    with request_scope():
        return app.resolve(event, context)
