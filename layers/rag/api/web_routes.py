"""The page: ``GET /`` and ``/index.html``, ``/assets/<name>``, ``/config.json`` (how the page signs in), and
``GET /health``. All public: they hold no tenant data and no secret (``rag.api.routes.PUBLIC_PATHS``).

Every response of these routes carries the page's security headers: a Content-Security-Policy that allows
only this origin's scripts and styles (no inline ones) and connections to this API, the upload bucket and the
sign-in provider's token endpoint; no referrer; no sniffing; no framing.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Literal
from urllib.parse import urlsplit

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from rag.api import API_VERSION
from rag.api.error_responses import ApiError
from rag.api.models.documents import Health
from rag.api.static_site import NO_CACHE, STATIC_DIR, Served, static_site
from rag.config import Settings, get_settings

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]  # Powertools leaves Router.__init__ unannotated

HEALTH_TIMEOUT_SECONDS = 2.0  # a health check answers within about this long, whatever the database does
OFF_REASON = (
    "This API takes IAM-signed (SigV4) requests only, which a browser cannot make; use the rag CLI, MCP or a"
    " signed client instead."
)
OIDC_FIELDS = ("client_id", "authorization_endpoint", "token_endpoint")
API_HEADERS = {"Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff"}


def origin_of(url: str | None) -> str | None:
    parts = urlsplit(url or "")
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme in ("http", "https") and parts.netloc else None


@lru_cache(maxsize=8)
def _security_headers(connect_origins: tuple[str, ...]) -> dict[str, str]:
    connect = " ".join(("'self'", *connect_origins))
    policy = (
        f"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src {connect};"
        " font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )
    return {"Content-Security-Policy": policy, **API_HEADERS, "X-Frame-Options": "DENY"}


def security_headers(settings: Settings) -> dict[str, str]:
    """The page's headers; connect-src names the upload bucket's origin and the sign-in provider's token endpoint."""
    from rag.api.upload_routes import upload_origin

    origins = [upload_origin(settings)]
    if settings.web.auth == "oidc":
        origins.append(origin_of(settings.web.oidc.get("token_endpoint")))
    return _security_headers(tuple(dict.fromkeys(o for o in origins if o)))


def _web_response(served: Served) -> Response[Any]:
    text = served.content_type.startswith(("text/", "application/json", "image/svg"))
    headers = {**security_headers(get_settings()), "Cache-Control": served.cache_control}
    body = served.body.decode("utf-8") if text else served.body  # bytes leave base64-encoded (Powertools)
    return Response(status_code=200, content_type=served.content_type, body=body, headers=headers)


def _site_dir(settings: Settings) -> Any:
    return (settings.web.static_dir or STATIC_DIR).resolve()


@router.get("/", include_in_schema=False)
@router.get("/index.html", include_in_schema=False)
def page() -> Response[Any]:
    site = static_site(_site_dir(get_settings()))
    if site.page is None:
        raise ApiError(404, "not_found", "the web page is not installed with this API")
    return _web_response(Served(site.page, "text/html; charset=utf-8", NO_CACHE))


@router.get("/assets/<name>", include_in_schema=False)
def asset(name: str) -> Response[Any]:
    served = static_site(_site_dir(get_settings())).asset(name)
    if served is None:
        raise ApiError(404, "not_found", f"no asset {name!r} (the page may have changed: reload it)")
    return _web_response(served)


def page_auth(settings: Settings) -> dict[str, Any]:
    """How the page signs in: ``api_key``, ``oidc`` with the provider's public client, or ``off`` with the reason."""
    if settings.web.auth == "api_key":
        return {"mode": "api_key"}
    oidc = settings.web.oidc
    if settings.web.auth == "off":
        return {"mode": "off", "reason": OFF_REASON}
    if missing := [name for name in OIDC_FIELDS if not oidc.get(name)]:
        return {"mode": "off", "reason": f"Sign-in is not configured: RAG_WEB_OIDC lacks {', '.join(missing)}."}
    return {
        "mode": "oidc",
        **{name: oidc[name] for name in OIDC_FIELDS},
        "scope": oidc.get("scope") or "openid email",
        "logout_endpoint": oidc.get("logout_endpoint") or None,
    }


@router.get("/config.json", include_in_schema=False)
def page_config() -> Response[Any]:
    settings = get_settings()
    config = {"auth": page_auth(settings), "api_version": API_VERSION, "upload": settings.web.upload_bucket is not None}
    body = json.dumps(config).encode()
    return _web_response(Served(body, content_types.APPLICATION_JSON, NO_CACHE))


@router.get(
    "/health",
    summary="Whether the API and its database answer (no tenant data, no secrets)",
    tags=["meta"],
    responses={
        200: {"description": "up", "content": {"application/json": {"model": Health}}},
        503: {"description": "the database did not answer in time", "content": {"application/json": {"model": Health}}},
    },
)
def health() -> Response[str]:
    from rag.store.health import database_answers

    up = database_answers(get_settings(), HEALTH_TIMEOUT_SECONDS)
    state: Literal["ok", "unavailable"] = "ok" if up else "unavailable"
    body = Health(status=state, database=state, version=API_VERSION).model_dump_json()
    return Response(
        status_code=200 if up else 503,
        content_type=content_types.APPLICATION_JSON,
        body=body,
        headers={"Cache-Control": "no-store"},
    )
