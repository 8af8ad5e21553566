"""GET /health through the real handler: public, no tenant data; 503 when the database cannot be reached."""

from __future__ import annotations

import json

from tests.api.test_web_page import request


def test_health_is_ok_without_identity_when_the_database_answers(database_url):
    response = request("/health")
    assert response["statusCode"] == 200
    assert json.loads(response["body"]) == {"status": "ok", "database": "ok", "version": "1.0.0"}
    assert response["headers"]["Cache-Control"] == "no-store"
    assert response["headers"]["X-Content-Type-Options"] == "nosniff"


def test_health_is_503_when_the_database_refuses_connections(database_url, closed_database_url, monkeypatch):
    from rag.config import get_settings

    monkeypatch.setenv("DATABASE_URL", closed_database_url)
    get_settings.cache_clear()
    response = request("/health")
    assert response["statusCode"] == 503
    assert json.loads(response["body"]) == {"status": "unavailable", "database": "unavailable", "version": "1.0.0"}


def test_health_is_503_when_the_database_accepts_but_never_answers(database_url, monkeypatch):
    """A server that takes the connection and then says nothing: the check gives up instead of waiting with it."""
    import socket

    from rag.config import get_settings

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # the kernel completes the handshakes; nobody ever reads or writes
        monkeypatch.setenv("DATABASE_URL", f"postgresql://postgres@127.0.0.1:{silent.getsockname()[1]}/rag")
        get_settings.cache_clear()
        response = request("/health")
    assert response["statusCode"] == 503
    assert json.loads(response["body"])["database"] == "unavailable"
