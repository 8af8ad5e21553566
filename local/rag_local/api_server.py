"""``rag serve``: HTTP on 127.0.0.1 -> API Gateway HTTP API (v2) events -> the query handler.

The caller's identity is an API key (``Authorization: Bearer <key>``), mapped to a
tenant by ``RAG_API_KEYS``; it becomes the JWT authorizer context API Gateway would
pass, so the handler sees exactly what it sees in AWS. No or an unknown key: no
authorizer context, and the handler answers 401.
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


def http_api_event(method: str, target: str, headers: dict[str, str], body: bytes, tenant: str | None, key: str | None) -> dict[str, Any]:
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
        event["requestContext"]["authorizer"] = {"jwt": {"claims": {"tenant": tenant, "sub": f"api-key:{key[:4]}…"}, "scopes": []}}
    return event


def make_server(settings: Settings, port: int | None = None) -> ThreadingHTTPServer:
    from rag_local.lambdas import load_handler_module

    handler = load_handler_module("query").lambda_handler
    keys = settings.api_key_tenants

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, fmt: str, *args: Any) -> None:
            logger.info("%s %s", self.address_string(), fmt % args)

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                self._reply(413, {"content-type": "application/json"}, json.dumps({"error": {"code": "too_large", "message": "request body over 6 MB"}}))
                return
            body = self.rfile.read(length) if length else b""
            auth = self.headers.get("Authorization", "")
            key = auth[7:].strip() if auth.lower().startswith("bearer ") else None
            tenant = keys.get(key) if key else None
            event = http_api_event(self.command, self.path, dict(self.headers), body, tenant, key)
            try:
                result = handler(event, LocalContext(function_name="query"))
            except Exception:
                # What API Gateway answers when the integration fails.
                logger.exception("query handler failed on %s %s", self.command, self.path)
                result = {"statusCode": 500, "headers": {"Content-Type": "application/json"}, "body": '{"message":"Internal Server Error"}'}
            payload = result.get("body") or ""
            raw = base64.b64decode(payload) if result.get("isBase64Encoded") else payload.encode()
            self._reply(result.get("statusCode", 200), result.get("headers") or {}, raw)

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

    return ThreadingHTTPServer(("127.0.0.1", settings.local_api_port if port is None else port), Handler)
