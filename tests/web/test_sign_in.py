"""Signing in through an OIDC provider: authorization code with PKCE (S256), state and nonce, back to
location.origin + "/", the ID token sent as the bearer and kept in sessionStorage only, the code gone from the URL.

The page is served by the real local API in ``oidc`` mode; the provider is a fake that speaks the protocol
(tests/web/fake_oidc.py). The local API knows API keys only, so it refuses the ID token: the page then asks
to sign in again with the server's message (what a user sees when the API's authorizer refuses a token).
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tests.web.conftest import PROJECT, open_page
from tests.web.fake_oidc import FakeOidc

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@contextmanager
def page_server(monkeypatch: pytest.MonkeyPatch, auth: str, oidc: dict[str, Any] | None = None) -> Iterator[str]:
    """The local API (no worker, no moto: the page and its settings need neither) with ``RAG_WEB_AUTH=auth``."""
    from rag.config import Settings, get_settings
    from rag_local.api_server import make_server

    monkeypatch.setenv("RAG_WEB_AUTH", auth)
    if oidc is not None:
        monkeypatch.setenv("RAG_WEB_OIDC", json.dumps(oidc))
    get_settings.cache_clear()
    server = make_server(Settings(), port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        get_settings.cache_clear()


@pytest.fixture
def oidc_site(database_url: str, monkeypatch: pytest.MonkeyPatch, browser: Any) -> Iterator[tuple[str, FakeOidc]]:
    """The local API serving the page with sign-in through the fake provider: (the page's origin, the provider)."""
    with FakeOidc() as provider, page_server(monkeypatch, "oidc", provider.config()) as origin:
        yield origin, provider


def refusal(origin: str, token: str) -> str:
    request = urllib.request.Request(f"{origin}/v1/projects", headers={"Authorization": f"Bearer {token}"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    return json.loads(refused.value.read())["error"]["message"]


def test_sign_in_uses_the_code_flow_with_pkce_and_sends_the_id_token(browser, oidc_site, problems):
    origin, provider = oidc_site
    page = open_page(browser, problems)
    bearers: list[str | None] = []
    page.on("request", lambda r: bearers.append(r.headers.get("authorization")) if r.url.startswith(f"{origin}/v1/") else None)
    page.goto(f"{origin}/#/p/{PROJECT}/brief")
    page.click("main button:text-is('Sign in')")
    alert = page.wait_for_selector("#main [role=alert]")  # back from the provider, refused by this API (API keys only)

    (asked,) = provider.authorizations
    assert asked["response_type"] == "code" and asked["client_id"] == provider.client_id
    assert asked["redirect_uri"] == f"{origin}/"
    assert asked["code_challenge_method"] == "S256" and len(asked["code_challenge"]) == 43
    assert len(asked["state"]) >= 22 and len(asked["nonce"]) >= 22 and asked["state"] != asked["nonce"]
    assert asked["scope"] == "openid email"
    assert provider.refusals == [] and len(provider.issued) == 1  # the verifier matched the challenge
    assert bearers == [f"Bearer {provider.issued[0]}"]  # the ID token is the bearer
    assert page.url == f"{origin}/#/p/{PROJECT}/brief"  # the code and state are gone; the user is back where they were
    assert alert.inner_text() == refusal(origin, provider.issued[0])
    assert page.evaluate("localStorage.length") == 0
    assert page.evaluate("sessionStorage.getItem('rag.idToken')") is None  # a refused token is forgotten
    page.context.close()
    assert list(problems) == []


def test_an_answer_that_does_not_match_the_request_is_refused(browser, oidc_site, problems):
    origin, provider = oidc_site
    page = open_page(browser, problems)
    page.goto(f"{origin}/?code=stolen-code&state=forged#/")
    alert = page.wait_for_selector("#main [role=alert]")
    assert "state" in alert.inner_text()
    assert provider.token_requests == []  # nothing traded
    assert "code=" not in page.url
    assert page.is_visible("main button:text-is('Sign in')")
    page.context.close()
    assert list(problems) == []


def test_with_the_page_off_it_says_why_and_asks_for_nothing(browser, database_url, monkeypatch, problems):
    with page_server(monkeypatch, "off") as origin:
        page = open_page(browser, problems)
        api_calls: list[str] = []
        page.on("request", lambda r: api_calls.append(r.url) if "/v1/" in r.url else None)
        page.goto(f"{origin}/")
        page.wait_for_selector("h1:text-is('The page is off')")
        reason = json.loads(urllib.request.urlopen(f"{origin}/config.json", timeout=30).read())["auth"]["reason"]
        assert page.inner_text("main p") == reason
        assert api_calls == [] and page.locator("#api-key").count() == 0 and page.is_hidden("#tabs")
        page.context.close()
    assert list(problems) == []
