"""What the local API server logs of a request: the method, the path and the status; never the query string (the
page's address holds an OIDC ``?code=`` on its way back from sign-in) nor the Authorization header."""

from __future__ import annotations

import logging
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from rag.config import Settings
from rag_local.api_server import make_server

KEY = "logs-secret-key"


@pytest.fixture
def origin() -> Iterator[str]:
    server = make_server(Settings(api_keys=f"{KEY}=acme"), port=0, timeout=5)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_no_query_string_and_no_token_in_the_log(origin, caplog):
    caplog.set_level(logging.INFO, logger="rag.api")
    for path in ("/?code=oidc-code-123&state=state-456", "/v1/nothing?token=query-token-789"):
        request = urllib.request.Request(origin + path, headers={"Authorization": f"Bearer {KEY}"})
        try:
            urllib.request.urlopen(request, timeout=30).close()
        except urllib.error.HTTPError:
            pass  # the page may be absent, and /v1/nothing is a 404: the line is logged either way
    with socket.create_connection(("127.0.0.1", int(origin.rsplit(":", 1)[1])), timeout=30) as sock:
        sock.sendall(b"GET /?code=oidc-code-bad HTTP/1.1 extra\r\n\r\n")  # malformed: http.server logs the error
        sock.recv(65536)
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert '"GET /v1/nothing" 404' in logged and '"GET /"' in logged
    for secret in ("oidc-code-123", "state-456", "query-token-789", "oidc-code-bad", KEY):
        assert secret not in logged
