"""The query API's resolver (Powertools APIGatewayHttpResolver, HTTP API payload v2).

The search routes (``rag.api.search_routes``), the catalog routes (``rag.api.catalog_routes``) and the ask
routes (``rag.api.ask_routes``) are routers included here; ``handle`` is the query function's entry point.

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

from rag.api import API_VERSION
from rag.api.ask_routes import router as ask_router
from rag.api.body_checks import body_problem
from rag.api.catalog_routes import router as catalog_router
from rag.api.document_routes import router as document_router
from rag.api.error_responses import ApiError, error_response, gateway_error
from rag.api.identity import Unauthenticated
from rag.api.request_scope import request_scope, request_tenant
from rag.api.search_routes import router as search_router
from rag.api.upload_routes import router as upload_router
from rag.api.web_routes import API_HEADERS
from rag.api.web_routes import router as web_router
from rag.store.failures import database_failure

API_TITLE = "Meeting RAG query API"

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


# Registered in this order (the OpenAPI document's): search, catalog, documents, uploads, ask, the page and health.
app.include_router(search_router)
app.include_router(catalog_router)
app.include_router(document_router)
app.include_router(upload_router)
app.include_router(ask_router)
app.include_router(web_router)


@app.get("/v1/openapi.json", summary="This API's OpenAPI document", tags=["meta"], include_in_schema=False)
def openapi() -> Response[str]:  # a raw Response, not a model
    return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=openapi_json())


def openapi_json() -> str:
    return app.get_openapi_json_schema(title=API_TITLE, version=API_VERSION)


# What answers without a caller's identity: nothing of a tenant's, no secret (the page, its config, health).
PUBLIC_PATHS = {"/v1/openapi.json", "/", "/index.html", "/config.json", "/health"}
PUBLIC_PREFIXES = ("/assets/",)


def is_public(path: str) -> bool:
    return path in PUBLIC_PATHS or (path.startswith(PUBLIC_PREFIXES) and "/" not in path.removeprefix("/assets/"))


def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Resolve an API Gateway HTTP API (v2) event; a caller without identity gets 401 before anything else."""
    return _with_api_headers(_resolve(event, context))


def _resolve(event: dict[str, Any], context: Any) -> dict[str, Any]:
    if not is_public(str(event.get("rawPath") or "")):
        try:
            request_tenant(event)
        except Unauthenticated as exc:
            return gateway_error(401, "unauthenticated", str(exc))
    if problem := body_problem(event):
        return gateway_error(400, *problem)
    with request_scope():
        return app.resolve(event, context)


def _with_api_headers(response: dict[str, Any]) -> dict[str, Any]:
    """Every response says: send no referrer, do not sniff the content type (the page's add more of their own)."""
    headers = response.setdefault("headers", {})
    for name, value in API_HEADERS.items():
        headers.setdefault(name, value)
    return response
