"""The query API's resolver (Powertools APIGatewayHttpResolver, HTTP API payload v2) and its search routes.

The catalog routes (``rag.api.catalog_routes``) and the ask routes (``rag.api.ask_routes``) are routers
included here; ``handle`` is the query function's entry point.

Validation comes from the pydantic models; every error leaves as
``{"error": {"code", "message"}}`` with 400/401/404/422 (never a 500 for bad input).
"""

from __future__ import annotations

from typing import Any

import psycopg
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)

from rag.api.ask_routes import router as ask_router
from rag.api.body_checks import body_problem
from rag.api.catalog_routes import router as catalog_router
from rag.api.error_responses import ApiError, error_response, gateway_error
from rag.api.errors import database_failure
from rag.api.identity import Unauthenticated
from rag.api.models.search import (
    ContextRequest,
    ContextResponse,
    SearchRequest,
    SearchResponse,
    SearchResult,
    search_result,
)
from rag.api.request_scope import request_conn, request_scope, request_tenant
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


@app.exception_handler(psycopg.OperationalError)  # QueryCanceled and PoolTimeout included
def _database_failed(exc: psycopg.OperationalError) -> Response[str]:
    failure = database_failure(exc)
    return error_response(failure.status, failure.code, failure.message)


def _search(request: SearchRequest) -> tuple[list[SearchResult], float]:
    from rag.embedding import get_embedder
    from rag.search.service import run_search

    settings = get_settings()
    ranked, took_ms = run_search(
        request_conn(), get_embedder(settings), settings, request.search_query(request_tenant(app.current_event.raw_event))
    )
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


# Registered in this order (the OpenAPI document's): search, catalog, ask, meta.
app.include_router(catalog_router)
app.include_router(ask_router)


@app.get("/v1/openapi.json", summary="This API's OpenAPI document", tags=["meta"], include_in_schema=False)
def openapi() -> Response[str]:  # a raw Response, not a model
    return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=openapi_json())


def openapi_json() -> str:
    return app.get_openapi_json_schema(title=API_TITLE, version=API_VERSION)


PUBLIC_PATHS = {"/v1/openapi.json"}


def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Resolve an API Gateway HTTP API (v2) event; a caller without identity gets 401 before anything else."""
    if event.get("rawPath") not in PUBLIC_PATHS:
        try:
            request_tenant(event)
        except Unauthenticated as exc:
            return gateway_error(401, "unauthenticated", str(exc))
    if problem := body_problem(event):
        return gateway_error(400, *problem)
    with request_scope():
        return app.resolve(event, context)
