"""Schemathesis against the generated OpenAPI document: no input the schema allows (or not) yields a 5xx.

The local HTTP server (``rag serve``'s) runs the real handler over real HTTP.
"""

from __future__ import annotations

import json
import socket
import threading

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from rag.api.routes import openapi_json

schema = schemathesis.openapi.from_dict(json.loads(openapi_json()))


@pytest.fixture(scope="module")
def base_url(corpus):
    import os

    from rag.config import get_settings
    from rag_local.api_server import make_server

    os.environ["RAG_UPLOAD_BUCKET"] = "schema-uploads"  # POST /v1/uploads presigns (offline) instead of a 503
    get_settings.cache_clear()

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = make_server(get_settings().with_values(api_keys="schema-key=acme"), port)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{port}"
    server.shutdown()
    server.server_close()
    os.environ.pop("RAG_UPLOAD_BUCKET", None)
    get_settings.cache_clear()


@pytest.mark.slow
@schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_request_breaks_the_api(case, base_url):
    response = case.call(base_url=base_url, headers={"Authorization": "Bearer schema-key"})
    assert response.status_code < 500, (case.method, case.formatted_path, case.body, response.text)
    markdown = case.formatted_path.endswith("/brief") and (case.query or {}).get("format") == "markdown"
    expected = "text/markdown" if markdown and response.status_code == 200 else "application/json"
    assert response.headers["content-type"][0].startswith(expected)
    if response.status_code >= 400:
        assert set(response.json()) == {"error"}
