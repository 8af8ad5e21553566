"""The backfill's knowledge through the API: knowledge types in /v1/search and /v1/context, and GET /v1/tasks."""

from __future__ import annotations

import pytest

from rag.knowledge import NAMES
from tests.api.conftest import call
from tests.api.test_contract import RESULT_FIELDS

pytestmark = pytest.mark.slow

TASK_FIELDS = {
    "id", "description", "assignee", "due_date", "status", "project_id", "document_id", "source", "meeting_date",
    "start_char", "end_char", "start_turn", "end_turn", "speakers", "evidence", "created_at", "changes",
}  # fmt: skip


@pytest.mark.parametrize(
    ("type_name", "query", "fields"),
    [
        ("segment", "when does the product launch?", {"title": "Launch schedule"}),
        ("decision", "what did we decide about the battery?", {"owner": "Maya", "status": "agreed"}),
        ("risk", "Voltacorp", {"category": "supply", "likelihood": "medium", "impact": "high"}),
        ("opportunity", "how could we earn more per unit?", {"type": "upsell", "next_step": "Price the backlit model"}),
        ("task", "who asks the supplier when they deliver?", {"assignee": "Jonas", "due_date": "2026-11-06"}),
    ],
)
def test_search_returns_a_knowledge_type_with_its_fields(knowledge, type_name, query, fields):
    status, body = call("POST", "/v1/search", {"query": query, "types": [type_name], "project_ids": ["remote"], "top_k": 3})
    assert status == 200 and body["results"]
    top = body["results"][0]
    assert set(top) == RESULT_FIELDS and top["type"] == type_name
    assert {k: top["metadata"][k] for k in fields} == fields
    assert top["id"] == str(knowledge[top["metadata"].get("summary") or top["content"]])
    assert top["source"]["uri"].startswith("s3://api-test/tenants/acme/projects/remote/2026-11-0")
    assert {r["type"] for r in body["results"]} == {type_name} and {r["project_id"] for r in body["results"]} == {"remote"}


@pytest.mark.parametrize("mode", ["semantic", "keyword", "hybrid"])
def test_types_all_is_one_ranked_list(knowledge, mode, database_url, monkeypatch):
    from rag.config import get_settings

    monkeypatch.setenv("RAG_QUERY_LOG_FLUSH_SECONDS", "0")  # each row at once (rag.search.query_log)
    get_settings.cache_clear()
    status, body = call("POST", "/v1/search", {"query": "risk that the supplier Voltacorp delivers the battery cells late",
                                                "types": ["all"], "mode": mode, "top_k": 10})  # fmt: skip
    assert status == 200
    results = body["results"]
    assert len(results) == 10 and len({r["type"] for r in results}) >= 3
    assert "chunk" in {r["type"] for r in results}
    scores = [r["score"] for r in results]
    assert scores == sorted(scores, reverse=True)
    voltacorp = [i for i, r in enumerate(results) if r["type"] == "risk" and "Voltacorp" in r["content"]]
    assert voltacorp and voltacorp[0] < 3
    if mode == "semantic":
        assert scores == [r["similarity"] for r in results]
    from rag.store.connection import connect

    with connect(database_url) as db:
        logged = db.execute("SELECT types FROM query_log ORDER BY id DESC LIMIT 1").fetchone()[0]
    assert logged == ["chunk", "segment", "decision", "risk", "opportunity", "task"]


def test_the_all_shorthand_equals_listing_every_type(knowledge):
    query = {"query": "battery decision", "top_k": 8, "mode": "hybrid"}
    listed = call("POST", "/v1/search", {**query, "types": ["chunk", "segment", "decision", "risk", "opportunity", "task"]})[1]
    shorthand = call("POST", "/v1/search", {**query, "types": ["all", "decision"]})[1]
    assert [(r["type"], r["id"]) for r in shorthand["results"]] == [(r["type"], r["id"]) for r in listed["results"]]
    assert call("POST", "/v1/search", {"query": "x", "types": ["all", "memo"]})[0] == 422


def test_context_cites_knowledge_items_with_their_fields(knowledge):
    from rag.embedding.tokens import count_cl100k

    status, body = call("POST", "/v1/context", {"query": "supplier risk for the battery cells and who follows up",
                                                 "types": ["all"], "max_tokens": 600, "top_k": 12})  # fmt: skip
    assert status == 200 and count_cl100k(body["context"]) <= 600
    types = [r["type"] for r in body["results"]]
    assert "chunk" in types and {"risk", "task"} <= set(types)
    for n, result in enumerate(body["results"], start=1):
        assert f"[{n}] " in body["context"] and result["content"] in body["context"]
    risk = next(r for r in body["results"] if r["type"] == "risk" and "Voltacorp" in r["content"])
    assert risk["content"] == "The cell supplier Voltacorp may not deliver the rechargeable cells before March"
    assert (
        "Risk: category supply; likelihood medium; impact high; mitigation Qualify a second cell supplier; status open\n"
        in body["context"]
    )


def test_tasks_list_soonest_due_first(knowledge, corpus):
    status, body = call("GET", "/v1/tasks")
    assert status == 200 and set(body) == {"tasks"}
    tasks = body["tasks"]
    assert [t["description"] for t in tasks[:2]] == ["Ask the supplier for a written delivery date",
                                                       "Schedule a new drop test for the enclosure"]  # fmt: skip
    assert {t["description"] for t in tasks[2:]} == {"Update the specification with the USB-C charging port",
                                                      "Order recycled plastic samples for the dock"}  # fmt: skip
    first = tasks[0]
    assert set(first) == TASK_FIELDS
    assert (first["assignee"], first["due_date"], first["status"], first["project_id"]) == (
        "Jonas",
        "2026-11-06",
        "open",
        "remote",
    )
    assert first["document_id"] == corpus["projects/remote/2026-11-02-battery-review.txt"]
    assert first["source"]["uri"] == "s3://api-test/tenants/acme/projects/remote/2026-11-02-battery-review.txt"
    assert (first["start_turn"], first["end_turn"], first["meeting_date"]) == (12, 12, "2026-11-02")
    assert first["id"] == str(knowledge[first["description"]])


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("status=open", {"Ask the supplier for a written delivery date", "Schedule a new drop test for the enclosure"}),
        ("status=done&project_id=remote", {"Update the specification with the USB-C charging port"}),
        ("project_id=other", {"Order recycled plastic samples for the dock"}),
        ("status=blocked&project_id=remote", set()),
        ("assignee=jonas", {"Ask the supplier for a written delivery date"}),  # any case of the owner's name
        ("assignee=Maya&status=open", set()),
        ("status=cancelled", set()),
        ("project_id=nobody-has-this", set()),
    ],
)
def test_tasks_filters(knowledge, query, expected):
    status, body = call("GET", f"/v1/tasks?{query}")
    assert status == 200 and {t["description"] for t in body["tasks"]} == expected


def test_tasks_are_tenant_filtered(knowledge):
    assert [t["description"] for t in call("GET", "/v1/tasks", tenant="globex")[1]["tasks"]] == [
        "Hide the zanzibar budget for the battery supplier"
    ]
    assert call("GET", "/v1/tasks", tenant="nobody")[1] == {"tasks": []}
    assert all("zanzibar" not in t["description"] for t in call("GET", "/v1/tasks?limit=500")[1]["tasks"])
    assert call("GET", "/v1/tasks", tenant=None)[0] == 401


@pytest.mark.parametrize(
    "query",
    [
        "status=finished",
        "status=",
        "limit=0",
        "limit=501",
        "limit=ten",
        "project_id=bad%20id!",
        "assignee=",
        "assignee=" + "x" * 201,
    ],
)
def test_tasks_bad_parameters_are_422(knowledge, query):
    status, body = call("GET", f"/v1/tasks?{query}")
    assert status == 422 and body["error"]["code"] == "validation_error"


def test_tasks_limit(knowledge):
    assert len(call("GET", "/v1/tasks?limit=1")[1]["tasks"]) == 1


def test_openapi_documents_tasks_and_the_all_shorthand(knowledge):
    spec = call("GET", "/v1/openapi.json", tenant=None)[1]
    assert "/v1/tasks" in spec["paths"] and "TaskList" in spec["components"]["schemas"]
    parameters = {p["name"] for p in spec["paths"]["/v1/tasks"]["get"]["parameters"]}
    assert parameters == {"status", "assignee", "project_id", "due_after", "due_before", "limit"}
    assert "all" in str(spec["components"]["schemas"]["SearchRequest"]["properties"]["types"])


def test_openapi_lists_the_registrys_kinds(knowledge):
    schemas = call("GET", "/v1/openapi.json", tenant=None)[1]["components"]["schemas"]
    types = schemas["SearchRequest"]["properties"]["types"]
    assert types["items"]["anyOf"][0]["enum"] == list(NAMES) and types["maxItems"] == len(NAMES) + 1
    assert (
        schemas["SearchResult"]["properties"]["type"]["enum"] == schemas["Citation"]["properties"]["type"]["enum"] == list(NAMES)
    )


def test_a_task_filter_postgresql_cannot_hold_is_refused_not_a_500(knowledge):
    # schemathesis found it: a NUL in a query parameter reached PostgreSQL, whose text cannot hold one.
    status, body = call("GET", "/v1/tasks?assignee=%00")
    assert status == 422 and body["error"]["code"] == "validation_error", body
    assert call("GET", "/v1/tasks?assignee=Jonas%20Weber")[0] == 200  # a name with a space still passes
