"""Bad input is a clear 4xx with the JSON error shape, never a 500."""

from __future__ import annotations

import pytest

from tests.api.conftest import call

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("body", "status", "code", "says"),
    [
        ({"query": ""}, 422, "validation_error", "query"),
        ({"query": "   "}, 422, "validation_error", "query is empty"),
        ({"query": "x" * 100_000}, 422, "validation_error", "at most 2000 characters"),
        ({"query": "battery\x00"}, 422, "validation_error", "NUL character"),
        ({"query": "x", "filters": {"source_prefix": "\x00"}}, 422, "validation_error", "NUL character"),
        ({"query": "x", "filters": {"speakers": ["Ann\x00"]}}, 422, "validation_error", "NUL character"),
        ({"query": "x", "top_k": 0}, 422, "validation_error", "top_k"),
        ({"query": "x", "top_k": 10_000}, 422, "validation_error", "top_k"),
        ({"query": "x", "types": ["memo"]}, 422, "validation_error", "types"),
        ({"query": "x", "mode": "fuzzy"}, 422, "validation_error", "mode"),
        ({"query": "x", "project_ids": ["bad id!"]}, 422, "validation_error", "project id"),
        ({"query": "x", "filters": {"date_from": "2026-12-01", "date_to": "2026-01-01"}}, 422, "validation_error", "date_from"),
        ({"query": "x", "tenant_id": "globex"}, 422, "validation_error", "tenant_id"),
        ([1, 2, 3], 422, "validation_error", ""),
    ],
)
def test_invalid_search_bodies(corpus, body, status, code, says):
    got_status, got = call("POST", "/v1/search", body)
    assert got_status == status
    assert got["error"]["code"] == code and says in got["error"]["message"]


def test_malformed_json_and_wrong_content_type(corpus):
    assert call("POST", "/v1/search", raw=b'{"query": ')[1]["error"]["code"] == "invalid_json"
    status, body = call("POST", "/v1/search", raw=b"query=x", content_type="text/plain")
    assert status == 400 and body["error"]["code"] == "unsupported_content_type"
    for content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
        status, body = call("POST", "/v1/search", raw=b'{"query": "x"}', content_type=content_type)
        assert status == 400 and body["error"]["code"] == "unsupported_content_type"


def test_no_identity_is_401(corpus):
    status, body = call("POST", "/v1/search", {"query": "battery"}, tenant=None)
    assert status == 401 and body["error"]["code"] == "unauthenticated"
    assert call("GET", "/v1/projects", tenant=None)[0] == 401


def test_unknown_project_and_route(corpus):
    status, body = call("POST", "/v1/search", {"query": "battery", "project_ids": ["nobody-has-this"]})
    assert status == 200 and body["results"] == []
    assert call("GET", "/v1/nothing-here")[0] == 404
    assert call("GET", "/v1/documents/not-a-uuid")[0] == 422
    assert call("GET", "/v1/meetings?limit=0")[0] == 422
