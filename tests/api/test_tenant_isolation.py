"""Whatever the filters and types, tenant A never receives a row of tenant B.

Both tenants hold chunks and knowledge items (segments, decisions, risks, opportunities,
tasks) that talk about batteries and budgets; globex's all mention "zanzibar".
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.api.conftest import call

pytestmark = pytest.mark.slow

GLOBEX_KEY = "projects/remote/globex-secret.txt"

requests = st.fixed_dictionaries(
    {
        "query": st.sampled_from(["globex zanzibar budget", "battery", "secret internal", "Zed Yves", "zanzibar"]),
        "mode": st.sampled_from(["semantic", "keyword", "hybrid"]),
        "top_k": st.integers(1, 100),
    },
    optional={
        "project_ids": st.lists(st.sampled_from(["remote", "other", "globex"]), max_size=3),
        "types": st.lists(
            st.sampled_from(["chunk", "segment", "decision", "risk", "opportunity", "task", "all"]), min_size=1, max_size=7
        ),
        "document_ids": st.lists(st.sampled_from(["review", "secret"]), max_size=2),
        "filters": st.fixed_dictionaries(
            {},
            optional={
                "speakers": st.lists(st.sampled_from(["Zed", "Yves", "Maya", "Jonas", "Lena"]), max_size=3),
                "source_prefix": st.sampled_from(
                    [
                        "projects/",
                        "tenants/",
                        "tenants/globex/",
                        "tenants/globex/projects/remote/globex",
                        "tenants/acme/projects/other/",
                    ]
                ),
                "date_from": st.sampled_from(["2026-01-01", "2026-11-03"]),
            },
        ),
    },
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(request=requests, tenant=st.sampled_from(["acme", "globex", "nobody"]))
def test_a_tenant_only_ever_sees_its_own_documents(corpus, knowledge, request, tenant):
    globex_doc = corpus[GLOBEX_KEY]
    documents_by_name = {"review": corpus["projects/remote/2026-11-02-battery-review.txt"], "secret": globex_doc}
    request = {**request, "document_ids": [documents_by_name[n] for n in request.get("document_ids", [])]}
    status, body = call("POST", "/v1/search", request, tenant=tenant)
    assert status == 200
    documents = {r["document_id"] for r in body["results"]}
    if tenant == "globex":
        assert documents <= {globex_doc}
    else:
        assert globex_doc not in documents
        assert all("zanzibar" not in r["content"].lower() for r in body["results"])
    if tenant == "nobody":
        assert documents == set()


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    tenant=st.sampled_from(["acme", "globex", "nobody"]),
    query=st.fixed_dictionaries({}, optional={"project_id": st.sampled_from(["remote", "other"]),
                                              "status": st.sampled_from(["open", "done", "blocked"])}),
)  # fmt: skip
def test_a_tenant_only_ever_lists_its_own_tasks(corpus, knowledge, tenant, query):
    from urllib.parse import urlencode

    status, body = call("GET", f"/v1/tasks?{urlencode(query)}", tenant=tenant)
    assert status == 200
    zanzibar = {t["id"] for t in body["tasks"] if "zanzibar" in t["description"]}
    if tenant == "globex":
        assert {t["document_id"] for t in body["tasks"]} <= {corpus[GLOBEX_KEY]} and zanzibar == {t["id"] for t in body["tasks"]}
    else:
        assert not zanzibar and corpus[GLOBEX_KEY] not in {t["document_id"] for t in body["tasks"]}
    if tenant == "nobody":
        assert body["tasks"] == []


def test_the_other_tenants_document_is_404_not_403(corpus):
    assert call("GET", f"/v1/documents/{corpus[GLOBEX_KEY]}", tenant="acme")[0] == 404
    assert call("GET", f"/v1/documents/{corpus[GLOBEX_KEY]}", tenant="globex")[0] == 200
    projects = call("GET", "/v1/projects", tenant="globex")[1]["projects"]
    assert [(p["id"], p["document_count"]) for p in projects] == [("remote", 1)]


def test_each_tenant_reaches_its_own_items_of_every_type(corpus, knowledge):
    # The property above would hold trivially if knowledge types found nothing: they do find the tenant's own rows.
    body = call("POST", "/v1/search", {"query": "zanzibar", "types": ["all"], "mode": "keyword", "top_k": 20}, tenant="globex")[1]
    assert {r["type"] for r in body["results"]} == {"chunk", "segment", "decision", "risk", "opportunity", "task"}
    acme = call("POST", "/v1/search", {"query": "zanzibar", "types": ["all"], "mode": "keyword"}, tenant="acme")[1]
    assert acme["results"] == []
