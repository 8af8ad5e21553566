"""An OpenAI-compatible server on 127.0.0.1 (embeddings, chat completions), speaking the real wire format.

Vectors are derived from the text (a hash-seeded unit vector), so they are
deterministic. ``fail_next`` scripts status codes (429, 500) for the next requests.
``chat_responses`` queues recorded assistant messages for ``/v1/chat/completions`` (with none queued,
``chat_responder(request body)`` answers, if set: a scripted model): a
dict or list is sent as the JSON content of a structured output, a string as is, an
``Assistant`` (``Assistant.load`` reads a recorded conversation) as that message, tool calls
included, and a ``RawBody`` as the whole response body (a server that answers 200 with something
other than a chat completion). ``chat_delay_seconds`` holds the next chat answers back (a model that times out);
clearing ``embeddings_open`` holds every embeddings answer back until it is set again (a provider that hangs).
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Assistant:
    """One recorded assistant message of a tool-calling conversation."""

    content: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # {"id"?, "name", "arguments": dict or raw text}

    @classmethod
    def load(cls, path: Any) -> list[Assistant]:
        """A recorded conversation: a JSON list of ``{"content"?, "tool_calls"?}`` assistant messages."""
        with open(path) as f:
            return [cls(m.get("content"), m.get("tool_calls", [])) for m in json.load(f)]

    def message(self) -> dict[str, Any]:
        calls = [
            {"id": call.get("id", f"call_{i}"), "type": "function",
             "function": {"name": call["name"],
                          "arguments": call["arguments"] if isinstance(call["arguments"], str) else json.dumps(call["arguments"])}}
            for i, call in enumerate(self.tool_calls)
        ]  # fmt: skip
        return {"role": "assistant", "content": self.content, "refusal": None, **({"tool_calls": calls} if calls else {})}


@dataclass(frozen=True)
class RawBody:
    """A 200 response to a chat request whose body is these bytes, as they are (not JSON, an HTML page, ...)."""

    body: bytes
    content_type: str = "application/json"


def vector_for(text: str, dim: int) -> list[float]:
    rng = random.Random(hashlib.sha256(text.encode()).digest())
    values = [rng.gauss(0, 1) for _ in range(dim)]
    norm = sum(v * v for v in values) ** 0.5
    return [v / norm for v in values]


class FakeOpenAI:
    def __init__(self, dimension: int = 1536, shuffle: bool = False):
        self.dimension = dimension
        self.shuffle = shuffle
        self.requests: list[dict[str, Any]] = []
        self.fail_next: list[int] = []
        self.chat_responses: list[Any] = []
        self.chat_responder: Callable[[dict[str, Any]], Any] | None = None  # answers when nothing is queued
        self.chat_delay_seconds: list[float] = []
        self.embeddings_open = threading.Event()
        self.embeddings_open.set()
        self.embeddings_held = 0  # embeddings requests waiting for embeddings_open right now
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
                if fake.fail_next:
                    status = fake.fail_next.pop(0)
                    payload = {
                        "error": {
                            "message": f"scripted {status}",
                            "type": "rate_limit_exceeded" if status == 429 else "server_error",
                        }
                    }
                    self._send(status, payload, {"retry-after-ms": "1"})
                    return
                if self.path == "/v1/chat/completions":
                    if fake.chat_delay_seconds:
                        time.sleep(fake.chat_delay_seconds.pop(0))
                    if not fake.chat_responses and fake.chat_responder is None:
                        self._send(
                            400, {"error": {"message": "FakeOpenAI: no chat response queued", "type": "invalid_request_error"}}
                        )
                        return
                    if fake.chat_responses and isinstance(fake.chat_responses[0], RawBody):
                        self._send_raw(fake.chat_responses.pop(0))
                        return
                    self._send(200, fake.chat_completion(body))
                    return
                if self.path != "/v1/embeddings":
                    self._send(404, {"error": {"message": "not found"}})
                    return
                with fake.lock:
                    fake.embeddings_held += 1
                fake.embeddings_open.wait()
                with fake.lock:
                    fake.embeddings_held -= 1
                inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                dim = body.get("dimensions", fake.dimension)
                data = []
                for i, text in enumerate(inputs):
                    vec = vector_for(text, dim)
                    if body.get("encoding_format") == "base64":
                        embedding: Any = base64.b64encode(struct.pack(f"<{dim}f", *vec)).decode()
                    else:
                        embedding = vec
                    data.append({"object": "embedding", "index": i, "embedding": embedding})
                if fake.shuffle:
                    data.reverse()
                tokens = sum(len(t.split()) for t in inputs)
                self._send(
                    200,
                    {
                        "object": "list",
                        "data": data,
                        "model": body["model"],
                        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
                    },
                )

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(raw)

            def _send_raw(self, raw: RawBody) -> None:
                self.send_response(200)
                self.send_header("Content-Type", raw.content_type)
                self.send_header("Content-Length", str(len(raw.body)))
                self.end_headers()
                self.wfile.write(raw.body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def chat_completion(self, body: dict[str, Any]) -> dict[str, Any]:
        answer = self.chat_responses.pop(0) if self.chat_responses or self.chat_responder is None else self.chat_responder(body)
        if isinstance(answer, Assistant):
            message = answer.message()
        else:
            message = {"role": "assistant", "content": answer if isinstance(answer, str) else json.dumps(answer), "refusal": None}
        return {
            "id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": 1_763_000_000,
            "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                         "logprobs": None, "message": message}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150},
        }  # fmt: skip

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
