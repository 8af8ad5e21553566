"""The page through the real query handler: index.html with content-hashed asset names, the assets' caching, the
page's security headers, /config.json in each sign-in mode; all without identity, every other route still 401."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest

from rag_local.api_server import http_api_event
from rag_local.lambdas import LocalContext, load_handler_module

APP_JS = b'import { x } from "./dom.js";\nconsole.log(x);\n'
APP_CSS = b"body { color: black; }\n"
DOM_JS = b"export const x = 1;\n"
INDEX = (
    '<!doctype html><link rel="stylesheet" href="/assets/app.css">'
    '<script type="module" src="/assets/app.js"></script><a href="/assets/missing.js">x</a>'
)


def sha12(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()[:12]


def request(path: str, *, tenant: str | None = None, method: str = "GET") -> dict[str, Any]:
    """The handler's whole result (status, headers, body) for a request without a body."""
    event = http_api_event(method, path, {}, b"", tenant, "test-key" if tenant else None)
    return load_handler_module("query").lambda_handler(event, LocalContext(function_name="query"))


def body_of(response: dict[str, Any]) -> bytes:
    body = response.get("body") or ""
    return base64.b64decode(body) if response.get("isBase64Encoded") else body.encode()


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A static directory of its own (the page's real files are the page's, and change)."""
    from rag.config import get_settings

    (tmp_path / "index.html").write_text(INDEX)
    (tmp_path / "app.js").write_bytes(APP_JS)
    (tmp_path / "app.css").write_bytes(APP_CSS)
    (tmp_path / "dom.js").write_bytes(DOM_JS)
    (tmp_path / ".secret.js").write_text("never served")
    monkeypatch.setenv("RAG_WEB_STATIC_DIR", str(tmp_path))
    get_settings.cache_clear()
    return tmp_path


PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self';"
        " font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
}


@pytest.mark.parametrize("path", ["/", "/index.html"])
def test_the_page_names_its_assets_by_content_hash_without_identity(site, path):
    response = request(path)
    assert response["statusCode"] == 200
    headers = response["headers"]
    assert headers["Content-Type"] == "text/html; charset=utf-8" and headers["Cache-Control"] == "no-cache"
    assert {name: headers[name] for name in PAGE_HEADERS} == PAGE_HEADERS
    html = body_of(response).decode()
    assert f'href="/assets/app.{sha12(APP_CSS)}.css"' in html
    assert f'src="/assets/app.{sha12(APP_JS)}.js"' in html
    assert 'href="/assets/missing.js"' in html  # not a file of the site: left as written


def test_a_hashed_asset_is_immutable_and_its_plain_name_is_revalidated(site):
    hashed = request(f"/assets/app.{sha12(APP_JS)}.js")
    assert hashed["statusCode"] == 200 and body_of(hashed) == APP_JS
    assert hashed["headers"]["Cache-Control"] == "public, max-age=31536000, immutable"
    assert hashed["headers"]["Content-Type"] == "text/javascript; charset=utf-8"
    assert hashed["headers"]["Content-Security-Policy"] == PAGE_HEADERS["Content-Security-Policy"]
    plain = request("/assets/dom.js")  # what app.js imports it by
    assert plain["statusCode"] == 200 and body_of(plain) == DOM_JS and plain["headers"]["Cache-Control"] == "no-cache"
    css = request(f"/assets/app.{sha12(APP_CSS)}.css")
    assert css["headers"]["Content-Type"] == "text/css; charset=utf-8" and body_of(css) == APP_CSS


@pytest.mark.parametrize(
    "path",
    [
        "/assets/app.000000000000.js",  # another version of app.js
        "/assets/nothing.js",
        "/assets/.secret.js",
        "/assets/index.html",
        "/assets/..%2Fapp.js",
    ],
)
def test_what_is_not_a_current_asset_is_404(site, path):
    response = request(path)
    assert response["statusCode"] == 404 and json.loads(response["body"])["error"]["code"] == "not_found"


def test_a_nested_assets_path_is_not_public(site):
    assert request("/assets/sub/app.js")["statusCode"] == 401
    assert request("/assets/sub/app.js", tenant="acme")["statusCode"] == 404


def test_config_says_api_key_locally(site):
    response = request("/config.json")
    assert response["statusCode"] == 200 and response["headers"]["Cache-Control"] == "no-cache"
    assert response["headers"]["Content-Type"] == "application/json"
    assert json.loads(response["body"]) == {"auth": {"mode": "api_key"}, "api_version": "1.0.0", "upload": False}
    assert response["headers"]["X-Frame-Options"] == "DENY"


OIDC = {
    "client_id": "page-client",
    "authorization_endpoint": "https://login.example.com/oauth2/authorize",
    "token_endpoint": "https://tokens.example.com/oauth2/token",
    "scope": "openid email",
    "logout_endpoint": "https://login.example.com/logout",
}


def test_config_gives_the_oidc_client_and_the_policy_allows_its_token_endpoint(site, monkeypatch):
    from rag.config import get_settings

    monkeypatch.setenv("RAG_WEB_AUTH", "oidc")
    monkeypatch.setenv("RAG_WEB_OIDC", json.dumps({**OIDC, "logout_endpoint": None}))
    get_settings.cache_clear()
    response = request("/config.json")
    assert json.loads(response["body"])["auth"] == {"mode": "oidc", **OIDC, "logout_endpoint": None}
    policy = request("/")["headers"]["Content-Security-Policy"]
    assert "connect-src 'self' https://tokens.example.com;" in policy
    assert "login.example.com" not in policy  # the page navigates there; it never fetches from it


@pytest.mark.parametrize(
    ("auth", "oidc", "reason"),
    [
        ("off", None, "IAM-signed"),
        ("oidc", {"client_id": "page-client"}, "RAG_WEB_OIDC lacks authorization_endpoint, token_endpoint"),
    ],
)
def test_config_says_why_the_page_is_off(site, monkeypatch, auth, oidc, reason):
    from rag.config import get_settings

    monkeypatch.setenv("RAG_WEB_AUTH", auth)
    if oidc:
        monkeypatch.setenv("RAG_WEB_OIDC", json.dumps(oidc))
    get_settings.cache_clear()
    config = json.loads(request("/config.json")["body"])
    assert config["auth"]["mode"] == "off" and reason in config["auth"]["reason"]
    assert request("/")["statusCode"] == 200  # the page itself shows the reason


def test_with_uploads_the_policy_allows_the_buckets_origin(site, monkeypatch):
    from rag.config import get_settings

    monkeypatch.setenv("RAG_UPLOAD_BUCKET", "team-documents")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5999")
    get_settings.cache_clear()
    assert json.loads(request("/config.json")["body"])["upload"] is True
    assert "connect-src 'self' http://127.0.0.1:5999;" in request("/")["headers"]["Content-Security-Policy"]


def test_without_a_page_installed_the_root_is_404(tmp_path, monkeypatch):
    from rag.config import get_settings

    monkeypatch.setenv("RAG_WEB_STATIC_DIR", str(tmp_path / "none"))
    get_settings.cache_clear()
    response = request("/")
    assert response["statusCode"] == 404 and json.loads(response["body"])["error"]["code"] == "not_found"


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/v1/projects"), ("GET", "/v1/documents"), ("POST", "/v1/uploads"), ("GET", "/index.htm"), ("GET", "/mcp")],
)
def test_every_other_route_wants_an_identity(site, method, path):
    response = request(path, method=method)
    assert response["statusCode"] == 401
    assert response["headers"]["Referrer-Policy"] == "no-referrer"
    assert response["headers"]["X-Content-Type-Options"] == "nosniff"


def test_the_real_pages_references_resolve():
    """The page as shipped: every /assets/ reference in index.html, and every module a script imports, is served."""
    page = request("/")
    assert page["statusCode"] == 200
    referenced = re.findall(r'(?:src|href)="(/assets/[^"]+)"', body_of(page).decode())
    assert {re.sub(r"\.[0-9a-f]{12}\.", ".", r) for r in referenced} >= {"/assets/app.js", "/assets/app.css"}
    pending, seen = list(referenced), set()
    while pending:
        path = pending.pop()
        if path in seen:
            continue
        seen.add(path)
        response = request(path)
        assert response["statusCode"] == 200, path
        if path.endswith(".js"):
            imports = re.findall(r'(?:import|from)\s*[({]?[^"\';]*["\']\./([\w.-]+)["\']', body_of(response).decode())
            pending += [f"/assets/{name}" for name in imports]
    assert any(re.fullmatch(r"/assets/app\.[0-9a-f]{12}\.js", p) for p in seen)
    assert len(seen) > 2  # the modules app.js imports were followed
