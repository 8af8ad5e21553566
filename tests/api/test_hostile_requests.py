"""Hostile request bodies (deep nesting, lone surrogates) are a 4xx with the JSON error shape, never a 500."""

from __future__ import annotations

import base64
import json

import pytest

from rag_local.api_server import http_api_event
from rag_local.lambdas import LocalContext, load_handler_module
from tests.api.conftest import call

DEPTH = 5_000  # far beyond Python's recursion limit (1,000)


def _deep_list(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def _deep_object(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


@pytest.mark.parametrize(
    "raw",
    [
        _deep_list(DEPTH),
        _deep_object(DEPTH),
        b'{"query": "x", "filters": {"speakers": ' + _deep_list(DEPTH) + b"}}",
        b"[" * DEPTH,  # never closed: still too deep before it is invalid
        b'{"query": "x", "types": ' + b'[{"a":' * (DEPTH // 2) + b"1" + b"}]" * (DEPTH // 2) + b"}",
    ],
    ids=["lists", "objects", "inside-a-field", "unclosed", "alternating"],
)
@pytest.mark.parametrize("path", ["/v1/search", "/v1/context"])
def test_deeply_nested_json_is_400_invalid_json(database_url, path, raw):
    status, body = call("POST", path, raw=raw)
    assert status == 400
    assert body["error"]["code"] == "invalid_json"
    assert "nested at most 64 levels" in body["error"]["message"]


def test_deep_nesting_in_a_base64_body_is_found_too(database_url):
    event = http_api_event("POST", "/v1/search", {"Content-Type": "application/json"}, _deep_object(DEPTH), "acme", "test-key")
    event["body"], event["isBase64Encoded"] = base64.b64encode(_deep_object(DEPTH)).decode(), True
    response = load_handler_module("query").lambda_handler(event, LocalContext(function_name="query"))
    assert response["statusCode"] == 400
    assert json.loads(response["body"])["error"]["code"] == "invalid_json"


def test_brackets_inside_strings_do_not_count_as_nesting(database_url):
    # 5,000 brackets in a string are text, not nesting: the request is judged on its fields.
    status, body = call("POST", "/v1/search", {"query": "[" * DEPTH, "top_k": 0})
    assert status == 422 and body["error"]["code"] == "validation_error" and "top_k" in body["error"]["message"]
    status, body = call("POST", "/v1/search", raw=b'{"query": "\\"[[[[", "top_k": 0}')
    assert status == 422 and "top_k" in body["error"]["message"]


def test_nesting_at_the_limit_is_judged_on_its_fields(database_url):
    raw = b'{"query": "x", "types": ' + _deep_list(62) + b"}"  # 63 levels with the outer object
    status, body = call("POST", "/v1/search", raw=raw)
    assert status == 422 and body["error"]["code"] == "validation_error" and "types" in body["error"]["message"]
    raw = b'{"query": "x", "types": ' + _deep_list(64) + b"}"  # 65 levels
    assert call("POST", "/v1/search", raw=raw)[1]["error"]["code"] == "invalid_json"


LONE_SURROGATE = "\ud800"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": "x", "filters": {"speakers": ["Ann", f"Bob{LONE_SURROGATE}"]}}, "filters.speakers.1"),
        ({"query": "x", "filters": {"source_prefix": f"projects/{LONE_SURROGATE}"}}, "filters.source_prefix"),
        ({"query": f"battery {LONE_SURROGATE}"}, "query"),
        ({"query": "battery \udfff"}, "query"),  # a lone low surrogate
    ],
)
@pytest.mark.parametrize("path", ["/v1/search", "/v1/context"])
def test_a_lone_surrogate_in_free_text_is_422(database_url, path, body, field):
    raw = json.dumps(body).encode()  # ASCII: the surrogate travels as the JSON escape \ud800
    assert b"\\ud" in raw
    status, got = call("POST", path, raw=raw)
    assert status == 422
    assert got["error"]["code"] == "validation_error"
    assert field in got["error"]["message"] and "surrogate" in got["error"]["message"]


def test_a_surrogate_pair_is_ordinary_text(database_url):
    # "\ud83d\udd0b" is one character (U+1F50B): valid text, judged on the other fields.
    status, body = call(
        "POST", "/v1/search", raw=b'{"query": "battery \\ud83d\\udd0b", "filters": {"speakers": ["\\ud83d\\ude00"]}, "top_k": 0}'
    )
    assert status == 422 and "top_k" in body["error"]["message"] and "surrogate" not in body["error"]["message"]
