"""Whatever the filters, tenant A never receives a row of tenant B."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import call

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
        "types": st.lists(st.sampled_from(["chunk", "segment", "decision", "risk", "opportunity", "task"]), min_size=1, max_size=6),
        "filters": st.fixed_dictionaries(
            {},
            optional={
                "speakers": st.lists(st.sampled_from(["Zed", "Yves", "Maya", "Jonas"]), max_size=3),
                "source_prefix": st.sampled_from(["projects/", "projects/remote/", "projects/remote/globex"]),
            },
        ),
    },
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(request=requests, tenant=st.sampled_from(["acme", "globex", "nobody"]))
def test_a_tenant_only_ever_sees_its_own_documents(corpus, request, tenant):
    globex_doc = corpus[GLOBEX_KEY]
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


def test_the_other_tenants_document_is_404_not_403(corpus):
    assert call("GET", f"/v1/documents/{corpus[GLOBEX_KEY]}", tenant="acme")[0] == 404
    assert call("GET", f"/v1/documents/{corpus[GLOBEX_KEY]}", tenant="globex")[0] == 200
    projects = call("GET", "/v1/projects", tenant="globex")[1]["projects"]
    assert [(p["id"], p["document_count"]) for p in projects] == [("remote", 1)]
