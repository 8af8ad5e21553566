"""``rag serve``'s HTTP server against hostile clients: bad Content-Length, silence, trickled heads and bodies, floods.

Raw sockets, because an HTTP client library would not send what these tests send. A hang
is the bug here, so every read waits at most ``PATIENCE`` seconds and then fails the test.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from rag.config import Settings
from rag_local.api_server import content_length, make_server

PATIENCE = 20.0  # seconds a test waits for the server before calling it hung
SERVER_TIMEOUT = 1.0  # the server's client timeout in these tests


@pytest.fixture(scope="module")
def address() -> Iterator[tuple[str, int]]:
    server = make_server(Settings(api_keys="limits-key=acme"), port=0, timeout=SERVER_TIMEOUT)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[:2]
    server.shutdown()
    server.server_close()


def connect(address: tuple[str, int]) -> socket.socket:
    sock = socket.create_connection(address, timeout=PATIENCE)
    sock.settimeout(PATIENCE)
    return sock


def read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (a hang raises socket.timeout)."""
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass  # closed with bytes of ours still unread: a reset instead of a clean end, after the answer
    return received


def parse(response: bytes) -> tuple[int, dict[str, str], dict]:
    head, _, body = response.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in header_lines)}
    return int(status_line.split()[1]), headers, json.loads(body)


def request(address: tuple[str, int], head: str, body: bytes = b"") -> tuple[int, dict[str, str], dict]:
    with connect(address) as sock:
        sock.sendall(head.encode("latin-1") + b"\r\n" + body)
        return parse(read_until_closed(sock))


def search_head(*extra_headers: str) -> str:
    lines = ["POST /v1/search HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json", *extra_headers]
    return "".join(f"{line}\r\n" for line in lines)


@pytest.mark.parametrize("value", ["abc", "-1", "-0", "1e3", "0x10", "+5", "12 13", "²"])
def test_a_bad_content_length_is_400_json(address, value):
    status, headers, body = request(address, search_head(f"Content-Length: {value}"), b'{"query": "x"}')
    assert status == 400
    assert headers["content-type"] == "application/json" and headers["connection"] == "close"
    assert body["error"]["code"] == "invalid_content_length"
    assert "expected Content-Length to be a non-negative integer" in body["error"]["message"]
    assert repr(value) in body["error"]["message"]


def test_two_different_content_lengths_are_400(address):
    status, _, body = request(address, search_head("Content-Length: 2", "Content-Length: 14"), b'{"query": "x"}')
    assert status == 400 and body["error"]["code"] == "invalid_content_length"


def test_content_length_parsing():
    assert content_length([]) == 0
    assert content_length(["14"]) == 14 and content_length([" 14 ", "14"]) == 14
    assert [content_length([v]) for v in ("-1", "abc", "", "1.0", "²")] == [None] * 5
    assert content_length(["2", "14"]) is None


def test_an_oversized_body_is_413_without_reading_it(address):
    status, _, body = request(address, search_head("Content-Length: 7000000"), b"{}")
    assert status == 413 and body["error"]["code"] == "too_large" and "at most 6291456 bytes" in body["error"]["message"]


def test_a_body_that_never_arrives_in_full_is_dropped(address):
    with connect(address) as sock:
        sock.sendall((search_head("Content-Length: 100") + "\r\n").encode() + b'{"query": ')  # 10 of 100 bytes, then silence
        status, headers, body = parse(read_until_closed(sock))
    assert status == 408 and headers["connection"] == "close"
    assert body["error"]["code"] == "request_timeout"
    assert body["error"]["message"] == f"expected the 100-byte body within {SERVER_TIMEOUT:g} s, got 10 bytes"


def test_a_body_trickled_a_byte_at_a_time_is_cut_at_the_deadline(address):
    # Each byte comes well within the per-read timeout; only a deadline on the whole body stops it.
    body = b'{"query": "' + b"x" * 27 + b'"}'
    with connect(address) as sock:
        sock.sendall((search_head(f"Content-Length: {len(body)}") + "\r\n").encode())
        sent = 0
        sock.setblocking(False)
        while sent < len(body):
            try:
                if sock.recv(1, socket.MSG_PEEK):
                    break  # the server answered before the end of the body
            except BlockingIOError:
                pass
            sock.send(body[sent : sent + 1])
            sent += 1
            time.sleep(SERVER_TIMEOUT * 0.3)
        sock.setblocking(True)
        sock.settimeout(PATIENCE)
        status, _, answer = parse(read_until_closed(sock))
    assert status == 408 and answer["error"]["code"] == "request_timeout"
    assert sent < len(body)


def test_a_silent_connection_is_closed_without_an_answer(address):
    with connect(address) as sock:
        assert read_until_closed(sock) == b""  # closed by the server (an idle keep-alive connection), not by our patience


@pytest.mark.parametrize(
    "partial",
    [b"GET /v1/openapi.json HTTP/1.1\r\n", b"GET /v1/openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n"],
    ids=["request-line", "headers-unfinished"],
)
def test_a_head_that_stops_short_is_answered_408_and_dropped(address, partial):
    with connect(address) as sock:
        sock.sendall(partial)
        status, headers, body = parse(read_until_closed(sock))
    assert status == 408 and headers["connection"] == "close"
    assert body["error"] == {
        "code": "request_timeout",
        "message": f"expected the request line and headers within {SERVER_TIMEOUT:g} s",
    }


def test_a_head_trickled_a_byte_at_a_time_is_cut_while_others_are_served(address):
    # GIVEN a client sending its headers a byte at a time, each byte well within the per-read timeout
    header = b"X-Slow: " + b"x" * 200 + b"\r\n"
    answers: list[int] = []
    with connect(address) as sock:
        sock.sendall(b"GET /v1/openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        sock.setblocking(False)
        sent = 0
        while sent < len(header):
            try:
                if sock.recv(1, socket.MSG_PEEK):
                    break  # the server answered before the end of the head
            except BlockingIOError:
                pass
            try:
                sock.send(header[sent : sent + 1])
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += 1
            if sent % 3 == 1:  # WHEN another client asks meanwhile, it is answered
                answers.append(request(address, "GET /v1/openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n")[0])
            time.sleep(SERVER_TIMEOUT * 0.3)
        sock.setblocking(True)
        sock.settimeout(PATIENCE)
        status, _, body = parse(read_until_closed(sock))

    # THEN the trickling client is answered 408 long before its head is complete; the others got theirs
    assert status == 408 and body["error"]["code"] == "request_timeout"
    assert sent < len(header)
    assert answers and set(answers) == {200}


def test_a_complete_request_is_still_served(address):
    body = json.dumps({"query": "battery"}).encode()
    status, headers, answer = request(address, search_head(f"Content-Length: {len(body)}"), body)
    assert status == 401 and answer["error"]["code"] == "unauthenticated"  # it reached the query handler
    status, _, schema = request(address, "GET /v1/openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    assert status == 200 and schema["info"]["title"] == "Meeting RAG query API"


def test_a_burst_of_clients_connecting_at_once_is_queued_not_reset(address):
    # GIVEN 64 clients that open their connections at the same instant (a chat front end after a deploy)
    ready = threading.Barrier(64, timeout=PATIENCE)
    statuses: list[int | str] = []

    def client() -> None:
        ready.wait()
        try:
            statuses.append(request(address, "GET /v1/openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n")[0])
        except OSError as exc:
            statuses.append(type(exc).__name__)

    threads = [threading.Thread(target=client) for _ in range(64)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=PATIENCE * 3)

    # THEN every one is answered: the listen backlog holds them until a thread is free
    assert statuses == [200] * 64


@pytest.fixture
def capped() -> Iterator[tuple[str, int]]:
    """A server serving at most CAP connections at once (a timeout long enough to hold them while we look)."""
    server = make_server(Settings(api_keys="limits-key=acme"), port=0, timeout=5.0, max_connections=CAP)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[:2]
    server.shutdown()
    server.server_close()


CAP = 4


def test_connections_beyond_the_cap_are_refused_at_once_and_served_again_after(capped):
    # GIVEN as many idle connections as the server serves at once (a flood of them, in small)
    idle = [connect(capped) for _ in range(CAP)]
    try:
        for sock in idle:
            sock.sendall(b"GET /v1/openapi.json HTTP/1.1\r\n")  # begun, never finished

        # WHEN one more client asks
        with connect(capped) as sock:
            sock.sendall(b"GET /v1/openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            refused = read_until_closed(sock)

        # THEN it is answered 503 at once (the idle ones are still held), and the idle ones get their 408 in time
        status, headers, body = parse(refused)
        assert status == 503 and headers["retry-after"] == "1" and body["error"]["code"] == "too_many_connections"
        assert [parse(read_until_closed(sock))[0] for sock in idle] == [408] * CAP
    finally:
        for sock in idle:
            sock.close()

    # AND once they are gone the server answers again
    def answered() -> int | None:
        try:
            return request(capped, "GET /v1/openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n")[0]
        except (OSError, ValueError):
            return None

    deadline = time.monotonic() + PATIENCE
    while (status := answered()) != 200 and time.monotonic() < deadline:
        time.sleep(0.1)  # (the last slot is released just after the server closed its connection)
    assert status == 200
