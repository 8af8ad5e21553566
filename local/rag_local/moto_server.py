"""moto's S3 and SQS on 127.0.0.1 for ``rag up``, behind a gate that puts each S3 write on disk before
it is acknowledged, and stops S3 writes before a stop.

Why not moto's ``ThreadedMotoServer`` as it is: moto keeps the bucket in memory, and an upload it
acknowledged must survive the process, however it ends (``rag down``, a kill). So after moto has
applied an S3 write and before the client hears back, the gate has the keys it wrote mirrored to
disk (``on_s3_write``: ``rag_local.durable.write_through``); when that fails, the client gets a 500
(which SDKs retry) instead of an acknowledgement. ``close_s3_writes`` (at a stop) makes every later
S3 write fail (503, which clients report as an error) and waits for the ones in flight. Reads and
SQS go on: the worker finishes the batch in hand. The server is built from the parts
``ThreadedMotoServer`` runs (moto's WSGI app and request handler, werkzeug's server).
"""

from __future__ import annotations

import io
import logging
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any
from urllib.parse import parse_qs, unquote
from xml.etree import ElementTree

logger = logging.getLogger("rag.moto")

WRITE_METHODS = frozenset({"PUT", "POST", "DELETE"})
# The service in a SigV4 credential scope: <key id>/<date>/<region>/<service>/aws4_request
CREDENTIAL_SCOPE = re.compile(r"Credential=[^/,\s]+/\d{8}/[^/]+/([^/]+)/aws4_request")
REFUSED_BODY = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>ServiceUnavailable</Code>'
    b"<Message>The local services are stopping; nothing was written. Try again after `rag up`.</Message></Error>"
)

UNSAVED_BODY = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InternalError</Code>'
    b"<Message>The write could not be put on disk, so it is not acknowledged (see services.log); send it again."
    b"</Message></Error>"
)

StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]
# Told, before the client hears back, which objects an S3 write changed: (bucket, keys); keys None: all may have.
OnS3Write = Callable[[str, Sequence[str] | None], None]


def signed_service(environ: dict[str, Any]) -> str | None:
    """The service a SigV4 request is signed for (header or presigned URL); None when unsigned or SigV2."""
    for text in (environ.get("HTTP_AUTHORIZATION", ""), unquote(environ.get("QUERY_STRING", ""))):
        if match := CREDENTIAL_SCOPE.search(text):
            return match.group(1)
    return None


def is_s3_write(environ: dict[str, Any]) -> bool:
    """A request that may change a bucket (unsigned and SigV2 requests are S3's: the SDKs sign SQS with SigV4)."""
    return environ.get("REQUEST_METHOD", "GET") in WRITE_METHODS and signed_service(environ) in (None, "s3")


def objects_written(environ: dict[str, Any]) -> tuple[str, list[str] | None] | None:
    """The bucket and keys an S3 write request may change, parsed the way moto parses them; None for
    writes that change no object (bucket settings, a multipart upload's start, parts and abort), and
    keys None for a form upload (its key is in the body).

    A DeleteObjects request names its keys in its body: that is read here and put back for moto.
    """
    from moto.core.request import Request
    from moto.s3.responses import S3Response
    from moto.s3.utils import bucket_name_from_url
    from moto.s3bucket_path.utils import bucket_name_from_url as path_bucket_name
    from moto.s3bucket_path.utils import parse_key_name as path_key_name

    request = Request(environ)
    path = unquote(request.raw_path)
    if S3Response.subdomain_based_buckets(request):
        bucket, key = bucket_name_from_url(request.raw_url), path[1:]
    else:
        bucket, key = path_bucket_name(request.raw_url), path_key_name(path)
    if not bucket:
        return None
    query = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
    method = environ.get("REQUEST_METHOD")
    if key:
        multipart_only = {"PUT": "partNumber", "POST": "uploads", "DELETE": "uploadId"}.get(method or "")
        return None if multipart_only in query else (bucket, [key])
    if method != "POST":
        return None  # a bucket's own settings, or the bucket itself
    if "delete" not in query:
        return bucket, None
    stream = environ["wsgi.input"]
    length = environ.get("CONTENT_LENGTH")
    body = stream.read(int(length)) if length else stream.read()
    environ["wsgi.input"] = io.BytesIO(body)
    try:
        root = ElementTree.fromstring(body)
    except ElementTree.ParseError:
        return None  # moto answers MalformedXML and deletes nothing
    return bucket, [element.text or "" for element in root.iter() if element.tag.rpartition("}")[2] == "Key"]


class S3WriteGate:
    """WSGI middleware: each S3 write that moto applied is reported to ``on_s3_write`` before its
    response goes out; after ``close``, S3 writes get a 503."""

    def __init__(self, app: WsgiApp, on_s3_write: OnS3Write | None = None) -> None:
        self.app = app
        self.on_s3_write = on_s3_write
        self._changed = threading.Condition()
        self._closed = False
        self._writing = 0  # S3 writes inside moto (or being mirrored) right now

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if not is_s3_write(environ):
            return self.app(environ, start_response)
        with self._changed:
            if self._closed:
                return _error(start_response, "503 Service Unavailable", REFUSED_BODY)
            self._writing += 1
        try:
            if self.on_s3_write is None:
                return self.app(environ, start_response)
            return self._write_through(self.on_s3_write, environ, start_response)
        finally:
            with self._changed:
                self._writing -= 1
                self._changed.notify_all()

    def _write_through(self, on_s3_write: OnS3Write, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        written = objects_written(environ)
        # moto has applied the write once its app returns; its status and headers are held back
        # until the write is on disk (werkzeug sends nothing before start_response).
        head: list[tuple[Any, ...]] = []
        early: list[bytes] = []  # what the app passes to WSGI's write callable (moto passes nothing)

        def hold(*args: Any) -> Callable[[bytes], None]:
            head.append(args)
            return early.append

        body = self.app(environ, hold)
        if written is not None and int(str(head[0][0])[:3]) < 400:
            bucket, keys = written
            try:
                on_s3_write(bucket, keys)
            except Exception:
                logger.exception("moto applied an S3 write to s3://%s (keys %s) that could not be put on disk; "
                                 "answered 500, not acknowledged", bucket, keys)  # fmt: skip
                if hasattr(body, "close"):
                    body.close()
                return _error(start_response, "500 Internal Server Error", UNSAVED_BODY)
        start_response(*head[0])
        return [*early, *body] if early else body

    def close(self, timeout: float) -> bool:
        """Refuse S3 writes from now on; True once none is in flight (False: some still were after ``timeout`` s)."""
        with self._changed:
            self._closed = True
            return self._changed.wait_for(lambda: self._writing == 0, timeout)


def _error(start_response: StartResponse, status: str, body: bytes) -> list[bytes]:
    headers = [("Content-Type", "application/xml"), ("Content-Length", str(len(body))), ("Connection", "close")]
    start_response(status, headers)
    return [body]


class MotoServer:
    """moto in server mode on ``host:port`` (bound at construction), in a thread of its own; see ``S3WriteGate``."""

    def __init__(self, port: int, host: str = "127.0.0.1", on_s3_write: OnS3Write | None = None) -> None:
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
        from werkzeug.serving import make_server

        self.gate = S3WriteGate(DomainDispatcherApplication(create_backend_app), on_s3_write)
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
