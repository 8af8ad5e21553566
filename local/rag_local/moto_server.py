"""moto's S3 and SQS on 127.0.0.1 for ``rag up``, behind a gate that stops S3 writes before a stop.

Why not moto's ``ThreadedMotoServer`` as it is: a graceful stop mirrors the bucket to disk one
last time (``rag_local.durable``), and an upload moto acknowledged after that pass would be lost
with moto's memory. ``close_s3_writes`` makes every later S3 write fail (503, which clients report
as an error) and waits for the ones in flight, so the last pass sees every upload that was ever
acknowledged. Reads and SQS go on: the worker finishes the batch in hand. The server is built from
the parts ``ThreadedMotoServer`` runs (moto's WSGI app and request handler, werkzeug's server).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import unquote

logger = logging.getLogger("rag.moto")

WRITE_METHODS = frozenset({"PUT", "POST", "DELETE"})
# The service in a SigV4 credential scope: <key id>/<date>/<region>/<service>/aws4_request
CREDENTIAL_SCOPE = re.compile(r"Credential=[^/,\s]+/\d{8}/[^/]+/([^/]+)/aws4_request")
REFUSED_BODY = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>ServiceUnavailable</Code>'
    b"<Message>The local services are stopping; nothing was written. Try again after `rag up`.</Message></Error>"
)

StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


def signed_service(environ: dict[str, Any]) -> str | None:
    """The service a SigV4 request is signed for (header or presigned URL); None when unsigned or SigV2."""
    for text in (environ.get("HTTP_AUTHORIZATION", ""), unquote(environ.get("QUERY_STRING", ""))):
        if match := CREDENTIAL_SCOPE.search(text):
            return match.group(1)
    return None


def is_s3_write(environ: dict[str, Any]) -> bool:
    """A request that may change a bucket (unsigned and SigV2 requests are S3's: the SDKs sign SQS with SigV4)."""
    return environ.get("REQUEST_METHOD", "GET") in WRITE_METHODS and signed_service(environ) in (None, "s3")


class S3WriteGate:
    """WSGI middleware: passes everything through until ``close``; after it, S3 writes get a 503."""

    def __init__(self, app: WsgiApp) -> None:
        self.app = app
        self._changed = threading.Condition()
        self._closed = False
        self._writing = 0  # S3 writes inside moto right now

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if not is_s3_write(environ):
            return self.app(environ, start_response)
        with self._changed:
            if self._closed:
                start_response(
                    "503 Service Unavailable",
                    [("Content-Type", "application/xml"), ("Content-Length", str(len(REFUSED_BODY))), ("Connection", "close")],
                )
                return [REFUSED_BODY]
            self._writing += 1
        try:
            # moto stores the object before it returns: what the client is then told is already in memory.
            return self.app(environ, start_response)
        finally:
            with self._changed:
                self._writing -= 1
                self._changed.notify_all()

    def close(self, timeout: float) -> bool:
        """Refuse S3 writes from now on; True once none is in flight (False: some still were after ``timeout`` s)."""
        with self._changed:
            self._closed = True
            return self._changed.wait_for(lambda: self._writing == 0, timeout)


class MotoServer:
    """moto in server mode on ``host:port`` (bound at construction), in a thread of its own."""

    def __init__(self, port: int, host: str = "127.0.0.1") -> None:
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
        from werkzeug.serving import make_server

        self.gate = S3WriteGate(DomainDispatcherApplication(create_backend_app))
        self._server = make_server(host, port, self.gate, threaded=True, request_handler=MotoRequestHandler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="moto", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def close_s3_writes(self, timeout: float = 10.0) -> bool:
        """See ``S3WriteGate.close``."""
        return self.gate.close(timeout)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
