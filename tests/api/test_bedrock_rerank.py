"""RAG_RERANKER=bedrock through POST /v1/search: Bedrock's scores order the results; its failure is counted."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.stub import Stubber

from rag.search import bedrock_rerank
from tests.api.conftest import call

QUESTION = {"query": "What did the group decide about the battery?", "project_ids": ["remote"], "mode": "hybrid"}
CANDIDATES = 4
ARN = "arn:aws:bedrock:eu-central-1::foundation-model/amazon.rerank-v1:0"


def ids(body: dict) -> list[str]:
    return [r["id"] for r in body["results"]]


@pytest.fixture
def bedrock(monkeypatch):
    """The reranker's Bedrock client, stubbed: the requests it would send are checked against the service model."""
    from rag.config import get_settings

    client = boto3.client("bedrock-agent-runtime", region_name="eu-central-1")
    monkeypatch.setattr(bedrock_rerank, "rerank_client", lambda region, timeout: client)
    monkeypatch.setenv("RAG_RERANK_CANDIDATES", str(CANDIDATES))
    get_settings.cache_clear()
    with Stubber(client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()
    get_settings.cache_clear()


def enable(monkeypatch) -> None:
    from rag.config import get_settings

    monkeypatch.setenv("RAG_RERANKER", "bedrock")
    monkeypatch.setenv("RAG_BEDROCK_RERANK_MODEL", "amazon.rerank-v1:0")
    monkeypatch.setenv("RAG_BEDROCK_REGION", "eu-central-1")
    get_settings.cache_clear()


def test_results_come_in_the_order_of_bedrocks_scores(corpus, bedrock, monkeypatch):
    status, fused = call("POST", "/v1/search", {**QUESTION, "top_k": CANDIDATES})
    assert status == 200 and len(fused["results"]) == CANDIDATES
    enable(monkeypatch)
    # Bedrock finds the last fused candidates best.
    scores = {i: 0.1 * (i + 1) for i in range(CANDIDATES)}
    bedrock.add_response(
        "rerank",
        {"results": [{"index": i, "relevanceScore": s} for i, s in sorted(scores.items(), key=lambda x: -x[1])]},
        {
            "queries": [{"type": "TEXT", "textQuery": {"text": QUESTION["query"]}}],  # as asked, not normalized
            "sources": [
                {"type": "INLINE", "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": r["content"][:1500]}}}
                for r in fused["results"]
            ],
            "rerankingConfiguration": {
                "type": "BEDROCK_RERANKING_MODEL",
                "bedrockRerankingConfiguration": {"modelConfiguration": {"modelArn": ARN}, "numberOfResults": CANDIDATES},
            },
        },
    )

    status, reranked = call("POST", "/v1/search", {**QUESTION, "top_k": 2})

    assert status == 200
    assert ids(reranked) == list(reversed(ids(fused)))[:2]
    assert [r["score"] for r in reranked["results"]] == pytest.approx([0.4, 0.3])


def test_throttling_keeps_the_fused_order_and_reports_the_fallback(corpus, bedrock, monkeypatch, capsys):
    _, fused = call("POST", "/v1/search", {**QUESTION, "top_k": 3})
    enable(monkeypatch)
    bedrock.add_client_error("rerank", service_error_code="ThrottlingException", http_status_code=429)
    capsys.readouterr()

    status, body = call("POST", "/v1/search", {**QUESTION, "top_k": 3})

    assert status == 200
    assert ids(body) == ids(fused)
    assert [r["score"] for r in body["results"]] == [r["score"] for r in fused["results"]]
    emf = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"RerankFallbacks"' in line]
    assert [m["RerankFallbacks"] for m in emf] == [[1.0]]
