"""The optional reranking stage through POST /v1/search, graded by an OpenAI-compatible fake."""

from __future__ import annotations

import json

import pytest

from tests.api.conftest import call
from tests.embedding.fake_openai import FakeOpenAI

QUESTION = {"query": "What did the group decide about the battery?", "project_ids": ["remote"], "mode": "hybrid"}
CANDIDATES = 6


def ids(body: dict) -> list[str]:
    return [r["id"] for r in body["results"]]


@pytest.fixture
def fake(monkeypatch):
    from rag.config import get_settings

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    with FakeOpenAI() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("RAG_RERANK_CANDIDATES", str(CANDIDATES))
        get_settings.cache_clear()
        yield server
    get_settings.cache_clear()


def enable_reranker(monkeypatch) -> None:
    from rag.config import get_settings

    monkeypatch.setenv("RAG_RERANKER", "llm")
    get_settings.cache_clear()


def test_graded_candidates_are_reordered_and_scored_by_grade(corpus, fake, monkeypatch):
    status, fused = call("POST", "/v1/search", {**QUESTION, "top_k": CANDIDATES})
    assert status == 200 and len(fused["results"]) == CANDIDATES
    enable_reranker(monkeypatch)
    # The model finds the last fused candidates best: grade = passage number, 5 highest.
    fake.chat_responses.append({"grades": [{"passage": i, "relevance": i} for i in range(CANDIDATES)]})

    status, reranked = call("POST", "/v1/search", {**QUESTION, "top_k": 3})

    assert status == 200
    assert ids(reranked) == list(reversed(ids(fused)))[:3]
    assert [r["score"] for r in reranked["results"]] == [0.5, 0.4, 0.3]
    [request] = [r for r in fake.requests if r["path"] == "/v1/chat/completions"]
    prompt = request["body"]["messages"][1]["content"]
    assert prompt.startswith("Question: What did the group decide about the battery?")  # as asked, not normalized
    assert f"[{CANDIDATES - 1}] " in prompt and f"[{CANDIDATES}] " not in prompt
    assert request["body"]["response_format"]["type"] == "json_schema"


def test_passages_the_model_skips_or_misnumbers_go_last_in_fused_order(corpus, fake, monkeypatch):
    _, fused = call("POST", "/v1/search", {**QUESTION, "top_k": CANDIDATES})
    enable_reranker(monkeypatch)
    fake.chat_responses.append({"grades": [{"passage": 2, "relevance": 9}, {"passage": 99, "relevance": 10}]})

    _, reranked = call("POST", "/v1/search", {**QUESTION, "top_k": 3})

    assert ids(reranked) == [ids(fused)[2], ids(fused)[0], ids(fused)[1]]
    assert [r["score"] for r in reranked["results"]] == [0.9, 0.0, 0.0]


@pytest.mark.parametrize("failure", ["unavailable", "malformed"])
def test_a_failing_reranker_leaves_the_fused_order(corpus, fake, monkeypatch, failure):
    _, fused = call("POST", "/v1/search", {**QUESTION, "top_k": 3})
    enable_reranker(monkeypatch)
    if failure == "unavailable":
        fake.fail_next = [503, 503]  # the first try and its one retry
    else:
        fake.chat_responses.append(json.dumps({"grades": "all good"}))

    status, body = call("POST", "/v1/search", {**QUESTION, "top_k": 3})

    assert status == 200
    assert ids(body) == ids(fused)
    assert [r["score"] for r in body["results"]] == [r["score"] for r in fused["results"]]


def test_no_reranker_is_called_unless_configured(corpus, fake):
    status, _ = call("POST", "/v1/search", {**QUESTION, "top_k": 3})
    assert status == 200
    assert fake.requests == []
