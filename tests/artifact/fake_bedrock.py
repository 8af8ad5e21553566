"""A Bedrock Runtime endpoint on 127.0.0.1 speaking the service's wire format, for a process that cannot be stubbed.

botocore in the artifact process signs and sends real requests (``AWS_ENDPOINT_URL_BEDROCK_RUNTIME`` points it
here): ``POST /model/<id>/converse`` answers with the queued Converse responses (``converse_responses``, as
``botocore.stub.Stubber`` takes them), ``POST /model/<id>/invoke`` with a Titan Text Embeddings V2 body
(the vector derived from the text, as tests/embedding/fake_openai.py does). The same server is Bedrock Agent
Runtime (``AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME``): ``POST /rerank`` answers with the queued ``rerank_responses``,
each a Rerank response body, or ``(status, raw body, error type)`` for what a broken or throttling service sends.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

from tests.embedding.fake_openai import vector_for


class FakeBedrock:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.converse_responses: list[dict[str, Any]] = []
        self.rerank_responses: list[dict[str, Any] | tuple[int, bytes, str | None]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
                if self.path == "/rerank":
                    fake.requests.append(
                        {"model": None, "operation": "rerank", "body": body, "auth": self.headers.get("Authorization")}
                    )
                    self._rerank()
                    return
                _, _, rest = self.path.partition("/model/")
                model, _, operation = rest.rpartition("/")
                fake.requests.append(
                    {"model": unquote(model), "operation": operation, "body": body, "auth": self.headers.get("Authorization")}
                )
                if operation == "converse":
                    if not fake.converse_responses:
                        self._send(400, {"message": "FakeBedrock: no Converse response queued"}, "ValidationException")
                        return
                    self._send(200, fake.converse_responses.pop(0))
                elif operation == "invoke":
                    vector = vector_for(body["inputText"], body.get("dimensions", 1024))
                    self._send(200, {"embedding": vector, "inputTextTokenCount": len(body["inputText"].split())})
                else:
                    self._send(404, {"message": f"FakeBedrock: no operation {operation!r}"}, "UnknownOperationException")

            def _rerank(self) -> None:
                if not fake.rerank_responses:
                    self._send(400, {"message": "FakeBedrock: no Rerank response queued"}, "ValidationException")
                    return
                response = fake.rerank_responses.pop(0)
                if isinstance(response, tuple):
                    self._send(*response)
                else:
                    self._send(200, response)

            def _send(self, status: int, payload: dict[str, Any] | bytes, error_type: str | None = None) -> None:
                raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.send_header("x-amzn-RequestId", "00000000-0000-0000-0000-000000000000")
                if error_type:
                    self.send_header("x-amzn-ErrorType", error_type)
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeBedrock:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
