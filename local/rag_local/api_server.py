"""``rag serve``: HTTP on 127.0.0.1 -> API Gateway HTTP API (v2) events -> the query handler.

The caller's identity is an API key (``Authorization: Bearer <key>``), mapped to a
tenant by ``RAG_API_KEYS``; it becomes the JWT authorizer context API Gateway would
pass, so the handler sees exactly what it sees in AWS. No or an unknown key: no
authorizer context, and the handler answers 401. A client silent for ``timeout`` seconds,
or slower than that with its whole body, is answered 408 (if it still listens) and dropped.
"""

from __future__ import annotations

import base64
import json
import logging
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from rag.config import Settings
from rag_local.lambdas import LocalContext

logger = logging.getLogger("rag.api")
MAX_BODY_BYTES = 6 * 1024 * 1024  # Lambda's synchronous payload limit
CLIENT_TIMEOUT_SECONDS = 30.0  # API Gateway's own limit on an integration is 30 s


def error_body(code: str, message: str) -> str:
    return json.dumps({"error": {"code": code, "message": message}})


def content_length(values: list[str]) -> int | None:
    """The body's length from the Content-Length header(s): 0 without one, None if unusable."""
    distinct = {value.strip() for value in values}
    if not distinct:
        return 0
    if len(distinct) > 1:
        return None  # two lengths for one body: which one frames it is anybody's guess
    (value,) = distinct
    return int(value) if value.isascii() and value.isdigit() else None


def http_api_event(
    method: str, target: str, headers: dict[str, str], body: bytes, tenant: str | None, key: str | None
) -> dict[str, Any]:
    url = urlsplit(target)
    now = time.time()
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": url.path,
        "rawQueryString": url.query,
        "headers": {k.lower(): v for k, v in headers.items()},
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "local",
            "domainName": "127.0.0.1",
            "domainPrefix": "local",
            "http": {"method": method, "path": url.path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1",
                     "userAgent": headers.get("User-Agent", "")},
            "requestId": str(uuid.uuid4()),
            "routeKey": "$default",
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "timeEpoch": int(now * 1000),
        },
        "isBase64Encoded": False,
    }  # fmt: skip
    if url.query:
        event["queryStringParameters"] = dict(parse_qsl(url.query, keep_blank_values=True))
    if body:
        try:
            event["body"] = body.decode("utf-8")
        except UnicodeDecodeError:
            event["body"], event["isBase64Encoded"] = base64.b64encode(body).decode(), True
    if tenant is not None:
        event["requestContext"]["authorizer"] = {
            "jwt": {"claims": {"tenant": tenant, "sub": f"api-key:{key[:4]}…"}, "scopes": []}
        }
    return event


def make_server(settings: Settings, port: int | None = None, *, timeout: float = CLIENT_TIMEOUT_SECONDS) -> ThreadingHTTPServer:
    """The server on 127.0.0.1; a client silent for ``timeout`` s, or slower than that with its body, is dropped."""
    from rag_local.lambdas import load_handler_module

    handler = load_handler_module("query").lambda_handler
    keys = settings.api_key_tenants
    client_timeout = timeout

    class Handler(BaseHTTPRequestHandler):
        # Every socket read and write times out: a silent client cannot hold a thread forever.
        timeout = client_timeout

        def log_message(self, fmt: str, *args: Any) -> None:
            logger.info("%s %s", self.address_string(), fmt % args)

        def _serve(self) -> None:
            values = self.headers.get_all("Content-Length") or []
            length = content_length(values)
            if length is None:
                got = ", ".join(values)
                self._refuse(400, "invalid_content_length", f"expected Content-Length to be a non-negative integer, got {got!r}")
                return
            if length > MAX_BODY_BYTES:
                self._refuse(413, "too_large", f"expected a request body of at most {MAX_BODY_BYTES} bytes, got {length}")
                return
            body = self._read_body(length)
            if body is None:
                return
            auth = self.headers.get("Authorization", "")
            key = auth[7:].strip() if auth.lower().startswith("bearer ") else None
            tenant = keys.get(key) if key else None
            event = http_api_event(self.command, self.path, dict(self.headers), body, tenant, key)
            try:
                result = handler(event, LocalContext(function_name="query"))
            except Exception:
                # What API Gateway answers when the integration fails.
                logger.exception("query handler failed on %s %s", self.command, self.path)
                result = {
                    "statusCode": 500,
                    "headers": {"Content-Type": "application/json"},
                    "body": '{"message":"Internal Server Error"}',
                }
            payload = result.get("body") or ""
            raw = base64.b64decode(payload) if result.get("isBase64Encoded") else payload.encode()
            self._reply(result.get("statusCode", 200), result.get("headers") or {}, raw)

        def _read_body(self, length: int) -> bytes | None:
            """The body, or None when it did not all arrive within ``timeout`` s (the connection is then dropped)."""
            deadline = time.monotonic() + self.timeout
            chunks: list[bytes] = []
            received, timed_out = 0, False
            while received < length:
                left = deadline - time.monotonic()
                timed_out = left <= 0
                if timed_out:
                    break
                # The deadline bounds the whole body: a byte now and then would pass a per-read timeout.
                self.connection.settimeout(min(left, self.timeout))
                try:
                    chunk = self.rfile.read1(min(length - received, 1 << 16))
                except TimeoutError:
                    timed_out = True
                    break
                if not chunk:
                    break  # the client closed its side before the end of the body
                chunks.append(chunk)
                received += len(chunk)
            self.connection.settimeout(self.timeout)
            if timed_out:
                message = f"expected the {length}-byte body within {self.timeout:g} s, got {received} bytes"
                self._refuse(408, "request_timeout", message)
                return None
            if received < length:
                message = f"expected a {length}-byte body, got {received} bytes before the end of the stream"
                self._refuse(400, "incomplete_body", message)
                return None
            return b"".join(chunks)

        def _refuse(self, status: int, code: str, message: str) -> None:
            """An answer before the body was read: the connection closes, as the bytes that follow frame nothing."""
            self.close_connection = True
            try:
                self._reply(status, {"Content-Type": "application/json", "Connection": "close"}, error_body(code, message))
            except OSError:
                pass  # the client is gone or reads nothing: there is nobody to tell

        def _reply(self, status: int, headers: dict[str, str], body: bytes | str) -> None:
            raw = body.encode() if isinstance(body, str) else body
            self.send_response(status)
            for name, value in headers.items():
                if name.lower() != "content-length":
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def __getattr__(self, name: str) -> Any:
            # Every method (QUERY, PROPFIND, ...) goes to the handler, which answers 404 for
            # routes it does not have, as API Gateway would; http.server would say 501.
            if name.startswith("do_"):
                return self._serve
            raise AttributeError(name)

    return LocalApiServer(("127.0.0.1", settings.local_api_port if port is None else port), Handler)


class LocalApiServer(ThreadingHTTPServer):
    # socketserver's listen backlog is 5: with dozens of clients connecting at once the kernel
    # drops the rest and they see a connection reset before any request is read.
    request_queue_size = 128
