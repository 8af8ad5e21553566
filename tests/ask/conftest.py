"""The query API's corpus (tests/api/conftest.py): the example transcripts for tenant acme, one meeting for globex."""

import threading

import pytest

from tests.api.conftest import closed_database_url, corpus, knowledge  # noqa: F401 - fixtures shared with the API tests


@pytest.fixture
def local_api(corpus, monkeypatch):  # noqa: F811 - the imported fixture, requested by name
    """The local API server (the real query handler) on a free port; keys k-acme and k-globex. Yields its URL."""
    from rag.config import get_settings
    from rag_local.api_server import make_server

    monkeypatch.setenv("RAG_API_KEYS", "k-acme=acme,k-globex=globex")
    get_settings.cache_clear()
    server = make_server(get_settings(), 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("RAG_LOCAL_API_PORT", str(server.server_address[1]))
    get_settings.cache_clear()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
