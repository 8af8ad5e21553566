"""``rag serve``: HTTP on 127.0.0.1 -> API Gateway HTTP API (v2) events -> the query handler.

The caller's identity is an API key (``Authorization: Bearer <key>``), mapped to a
tenant by ``RAG_API_KEYS``; it becomes the JWT authorizer context API Gateway would
pass, so the handler sees exactly what it sees in AWS. No or an unknown key: no
authorizer context, and the handler answers 401.

Hostile clients are bounded, each request as a whole, not each read: a request head (request
line and headers) not in within ``timeout`` seconds, or a body not in within ``timeout`` seconds
more, is answered 408 (if it still listens) and dropped, so a client sending a byte now and then
holds nothing for long; a connection that sent nothing is closed after ``timeout`` seconds
without an answer (an idle keep-alive connection). At most ``max_connections`` connections are
served at once (a thread each); one more is answered 503 at once and closed, so a flood of idle
connections cannot exhaust the process.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar
from urllib.parse import parse_qsl, urlsplit

from rag.config import Settings
from rag_local.lambdas import LocalContext

logger = logging.getLogger("rag.api")
MAX_BODY_BYTES = 6 * 1024 * 1024  # Lambda's synchronous payload limit
CLIENT_TIMEOUT_SECONDS = 30.0  # API Gateway's own limit on an integration is 30 s
MAX_CONNECTIONS = 64  # connections served at once, a thread each
QUERY_STRING = re.compile(r"\?[^\s\"']*")  # what is left out of logged lines (an OIDC code, a key in a bad URL)


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
    if tenant is not None and key is not None:  # a tenant comes only from a key
        event["requestContext"]["authorizer"] = {
            "jwt": {"claims": {"tenant": tenant, "sub": f"api-key:{key[:4]}…"}, "scopes": []}
        }
    return event


class DeadlineReader(io.RawIOBase):
    """A connection's reads; while a ``deadline`` is set, each read waits only for what is left of it.

    A per-read timeout alone lets a client that sends a byte every few seconds hold its
    connection forever; the deadline bounds a whole request head, or a whole body.
    """

    def __init__(self, connection: socket.socket, timeout: float) -> None:
        super().__init__()
        self.connection = connection
        self.timeout = timeout  # each read's own bound, outside a deadline
        self.deadline: float | None = None  # a time.monotonic() instant
        self.received = 0  # bytes read since the deadline was set
        self.expired = False  # a read ran into the deadline

    def start(self, seconds: float) -> None:
        self.deadline, self.received, self.expired = time.monotonic() + seconds, 0, False

    def stop(self) -> None:
        self.deadline = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                self.expired = True
                raise TimeoutError("the deadline passed")
            self.connection.settimeout(min(left, self.timeout))
        try:
            count = self.connection.recv_into(buffer)
        except TimeoutError:
            self.expired = self.deadline is not None
            raise
        finally:
            self.connection.settimeout(self.timeout)
        self.received += count
        return count


class QueryRequestHandler(BaseHTTPRequestHandler):
    """One connection to the local API: HTTP in, the query function's event out, its response back.
    ``make_server`` subclasses it with the settings' keys, the timeout and the handler."""

    # Every socket read and write times out; reads within a head or a body also by a deadline.
    timeout: ClassVar[float | None] = CLIENT_TIMEOUT_SECONDS  # StreamRequestHandler's class attribute
    client_timeout: float = CLIENT_TIMEOUT_SECONDS
    keys: Mapping[str, str] = {}
    query: Callable[[dict[str, Any], Any], dict[str, Any]]
    reader: DeadlineReader

    def setup(self) -> None:
        super().setup()
        buffered = self.rfile
        self.reader = DeadlineReader(self.connection, self.client_timeout)
        self.rfile = io.BufferedReader(self.reader)
        buffered.close()  # (it holds a reference that would keep the socket open after close)

    def handle_one_request(self) -> None:
        self.reader.start(self.client_timeout)  # the head: from now (idle keep-alive time included)
        super().handle_one_request()  # a timeout in the head ends it quietly, the connection to be closed
        if self.reader.deadline is not None and self.reader.expired:
            self.close_connection = True
            if self.reader.received:  # a request was begun: say why it ends (an idle connection just closes)
                self.requestline, self.request_version, self.command = "", "HTTP/1.1", ""
                message = f"expected the request line and headers within {self.client_timeout:g} s"
                self._refuse(408, "request_timeout", message)
        self.reader.stop()

    def parse_request(self) -> bool:
        parsed = super().parse_request()
        self.reader.stop()  # the head is in
        return parsed

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """The access line without the query string: the page's address may hold an OIDC ``?code=``."""
        if self.command and hasattr(self, "path"):
            line = f"{self.command} {urlsplit(self.path).path}"
        else:  # a request line that did not parse
            line = QUERY_STRING.sub("?…", getattr(self, "requestline", ""))
        logger.info('%s "%s" %s %s', self.address_string(), line, code, size)

    def log_message(self, fmt: str, *args: Any) -> None:
        logger.info("%s %s", self.address_string(), QUERY_STRING.sub("?…", fmt % args))

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
        tenant = self.keys.get(key) if key else None
        event = http_api_event(self.command, self.path, dict(self.headers), body, tenant, key)
        try:
            result = self.query(event, LocalContext(function_name="query"))
        except Exception:
            # What API Gateway answers when the integration fails.
            logger.exception("query handler failed on %s %s", self.command, urlsplit(self.path).path)
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
        chunks: list[bytes] = []
        received, timed_out = 0, False
        self.reader.start(self.client_timeout)  # the whole body: a byte now and then would pass a per-read timeout
        try:
            while received < length:
                try:
                    chunk = self.rfile.read1(min(length - received, 1 << 16))
                except TimeoutError:
                    timed_out = True
                    break
                if not chunk:
                    break  # the client closed its side before the end of the body
                chunks.append(chunk)
                received += len(chunk)
        finally:
            self.reader.stop()
        if timed_out:
            message = f"expected the {length}-byte body within {self.client_timeout:g} s, got {received} bytes"
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


def make_server(
    settings: Settings,
    port: int | None = None,
    *,
    timeout: float = CLIENT_TIMEOUT_SECONDS,
    max_connections: int = MAX_CONNECTIONS,
) -> ThreadingHTTPServer:
    """The server on 127.0.0.1: ``timeout`` bounds a request's head and its body (each as a whole),
    ``max_connections`` the connections served at once (see the module's docstring)."""
    from rag_local.lambdas import load_handler_module

    attributes = {
        "timeout": timeout,
        "client_timeout": timeout,
        "keys": settings.api.key_tenants,
        "query": staticmethod(load_handler_module("query").lambda_handler),
    }
    handler = type("LocalQueryRequestHandler", (QueryRequestHandler,), attributes)
    return LocalApiServer(("127.0.0.1", settings.local.api_port if port is None else port), handler, max_connections)


BUSY_BODY = error_body("too_many_connections", "the server has as many connections as it serves at once; retry shortly").encode()
BUSY_RESPONSE = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\n"
    + f"Content-Length: {len(BUSY_BODY)}\r\n\r\n".encode()
    + BUSY_BODY
)


class LocalApiServer(ThreadingHTTPServer):
    """A thread per connection, at most ``max_connections`` of them; the others are answered 503 at once."""

    # socketserver's listen backlog is 5: with dozens of clients connecting at once the kernel
    # drops the rest and they see a connection reset before any request is read.
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], max_connections: int) -> None:
        super().__init__(address, handler)
        self.max_connections = max_connections
        self._slots = threading.BoundedSemaphore(max_connections)
        self._refusing = False  # (logged once per busy spell)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self._refuse_busy(request, client_address)
            return
        self._refusing = False
        try:
            super().process_request(request, client_address)  # the connection's thread
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def _refuse_busy(self, request: socket.socket, client_address: Any) -> None:
        """503 and close, from the accepting thread: never waits on the client."""
        if not self._refusing:
            self._refusing = True
            logger.warning("%d connections open: answering new ones 503 until one ends (from %s)",
                           self.max_connections, client_address[0])  # fmt: skip
        request.setblocking(False)
        try:
            request.send(BUSY_RESPONSE)  # a fresh socket's send buffer takes it whole
            request.shutdown(socket.SHUT_WR)
            while request.recv(65536):  # what the client sent already: unread, closing would reset the connection
                pass
        except OSError:
            pass  # nothing more to read now, or the client is gone
        self.shutdown_request(request)
