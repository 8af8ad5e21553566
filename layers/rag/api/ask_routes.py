"""The ask routes: a cited answer (``/v1/ask``), the tools' schemas, and the tools over MCP (``/mcp``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from rag.api.ask_metrics import record_answer
from rag.api.error_responses import ApiError, error_response
from rag.api.models.ask import AskRequest, AskResponse
from rag.api.request_scope import request_conn, request_read, request_tenant
from rag.config import get_settings

if TYPE_CHECKING:
    from psycopg import Connection

    from rag.ask.types import Answer
    from rag.store.replica import WriterSource

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]  # Powertools leaves Router.__init__ unannotated


@router.post("/v1/ask", summary="A cited answer: the chat model calls this API's tools (or an extractive answer)", tags=["ask"])
def ask(request: AskRequest) -> AskResponse:
    from rag.ask.answer import AskTimeout
    from rag.ask.answer import ask as answer
    from rag.store.catalog import get_project
    from rag.store.embedding_space import active_embedder

    settings = get_settings()
    tenant = request_tenant(router.current_event.raw_event)

    def on(conn: Connection, writer: WriterSource | None) -> Answer:  # the reader when one is configured
        for project_id in request.project_ids:  # a project the reader has not seen yet may be new: the writer decides
            if get_project(conn, tenant, project_id) is None and (
                writer is None or get_project(writer(), tenant, project_id) is None
            ):
                raise ApiError(404, "not_found", f"project {project_id!r} not found")
        return answer(conn, settings, tenant, request.question_asked(), embedder=active_embedder(conn, settings), writer=writer)

    try:
        reply = request_read(on)
    except AskTimeout as exc:
        raise ApiError(504, "timeout", f"{exc}; ask a narrower question or retry") from exc
    record_answer(reply)
    return AskResponse.of(reply)


@router.get("/v1/tools", summary="The tools of /v1/ask and /mcp in OpenAI and Anthropic function-calling form", tags=["ask"])
def tools() -> dict[str, Any]:
    from rag.ask.tools import tool_schemas

    return tool_schemas()


MCP_POST_ONLY = (
    "this MCP server is stateless: send JSON-RPC messages with POST (it opens no event stream and has no session to end)"
)


@router.route("/mcp", method=["POST", "GET", "DELETE"], include_in_schema=False)
def mcp() -> Response[str]:  # a raw Response: the MCP SDK writes the body
    """MCP over Streamable HTTP (stateless, JSON responses): the tools of /v1/ask as the caller's tenant."""
    event = router.current_event
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
    tenant = request_tenant(router.current_event.raw_event)
    raw = event.body or ""
    body = base64.b64decode(raw) if event.is_base64_encoded else raw.encode("utf-8")
    # The connection is borrowed by a tool call only: initialize and tools/list work without the database.
    status, headers, payload = handle_http(
        event.http_method, dict(event.headers or {}), body, lambda: nullcontext(ToolContext(request_conn(), settings, tenant))
    )
    return Response(status_code=status, content_type=headers.pop("content-type", content_types.APPLICATION_JSON),
                    body=payload.decode("utf-8"), headers=headers)  # fmt: skip
