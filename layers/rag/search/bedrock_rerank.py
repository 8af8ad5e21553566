"""Bedrock's managed rerank models as the second judge (``RAG_RERANKER=bedrock``).

The fused candidates go to bedrock-agent-runtime's Rerank API with the model of ``RAG_BEDROCK_RERANK_MODEL``
(Cohere Rerank 3.5 or Amazon Rerank 1.0, named by its foundation-model ARN in ``bedrock_region``, else
``aws_region``). Each passage gets the model's relevance score (0-1) and the hits are ordered by it
(``rag.search.rerank``). The call is bounded: ``rerank_timeout_seconds`` covers a first attempt and one retry
(throttling, 5xx, a dropped connection), and any failure leaves the fused order (logged and counted there).

A cross-encoder scores each (query, passage) pair on its own, so scores from several calls compare: candidates
beyond ``SOURCES_PER_CALL`` go in further calls, each started only while time is left.

boto3 is imported only when a Bedrock reranker is first used: a query function without one never loads it here.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from rag.search.rerank import PASSAGE_CHARS

if TYPE_CHECKING:
    from rag.config import Settings

# The API takes up to 1,000 sources per call (botocore's model of Rerank); Bedrock Knowledge Bases reranks at most
# 100 results per query. 100 per call keeps a call's payload (about 150 kB at PASSAGE_CHARS) and latency small.
SOURCES_PER_CALL = 100
# Cohere Rerank 3.5 reads 4,096 tokens of query and passage together; a question longer than this is not a question.
QUERY_CHARS = 2000
# A first attempt and one retry in botocore's standard mode, each with half of rerank_timeout_seconds to read.
ATTEMPTS = 2
CONNECT_TIMEOUT_SECONDS = 2.0


class MalformedRerankResponse(ValueError):
    """A Rerank reply that does not answer the request it was given (indices outside it, repeated, no scores)."""


class RerankUnavailable(RuntimeError):
    """Rerank cannot be called from here (the runtime's botocore predates the operation)."""


def model_arn(model_id: str, region: str) -> str:
    """The foundation-model ARN the Rerank API names its model by, in the partition of ``region``."""
    partition = "aws-cn" if region.startswith("cn-") else "aws-us-gov" if region.startswith("us-gov-") else "aws"
    return f"arn:{partition}:bedrock:{region}::foundation-model/{model_id}"


@lru_cache(maxsize=4)
def rerank_client(region: str, timeout_seconds: float) -> Any:
    """One bedrock-agent-runtime client per region and timeout for the process (a client costs tens of ms)."""
    import boto3
    from botocore.config import Config

    per_attempt = timeout_seconds / ATTEMPTS
    config = Config(
        connect_timeout=min(CONNECT_TIMEOUT_SECONDS, per_attempt),
        read_timeout=per_attempt,
        retries={"mode": "standard", "total_max_attempts": ATTEMPTS},
    )
    return boto3.client("bedrock-agent-runtime", region_name=region, config=config)


def rerank_request(model: str, query: str, passages: Sequence[str]) -> dict[str, Any]:
    """The Rerank request for one batch: every passage scored (numberOfResults), texts cut to the bounds."""
    return {
        "queries": [{"type": "TEXT", "textQuery": {"text": query[:QUERY_CHARS] or " "}}],
        "sources": [
            {"type": "INLINE", "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": text[:PASSAGE_CHARS] or " "}}}
            for text in passages
        ],
        "rerankingConfiguration": {
            "type": "BEDROCK_RERANKING_MODEL",
            "bedrockRerankingConfiguration": {
                "modelConfiguration": {"modelArn": model},
                "numberOfResults": len(passages),
            },
        },
    }


def batch_scores(response: Any, size: int) -> list[float]:
    """One score per passage of a batch of ``size`` from a Rerank reply; a passage the reply left out scores -1."""
    results = response.get("results") if isinstance(response, dict) else None
    if not isinstance(results, list) or (size and not results):
        raise MalformedRerankResponse(f"Rerank answered without results: {str(response)[:200]}")
    scores = [-1.0] * size
    seen: set[int] = set()
    for result in results:
        index = result.get("index") if isinstance(result, dict) else None
        score = result.get("relevanceScore") if isinstance(result, dict) else None
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < size or index in seen:
            raise MalformedRerankResponse(f"Rerank returned index {index!r} for {size} passages (or twice)")
        if not isinstance(score, int | float) or isinstance(score, bool) or not math.isfinite(score):
            raise MalformedRerankResponse(f"Rerank returned the score {score!r} for passage {index}")
        seen.add(index)
        scores[index] = float(score)
    return scores


class BedrockReranker:
    """Relevance scores (0-1) from a Bedrock rerank model through the Rerank API."""

    max_grade = 1.0

    def __init__(self, settings: Settings, client: Any = None):
        self.region = settings.embedding.bedrock_region or settings.aws.region
        self.model = model_arn(settings.search.bedrock_rerank_model, self.region)
        self.timeout_seconds = settings.search.rerank_timeout_seconds
        self._client = client

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = rerank_client(self.region, self.timeout_seconds)
        if not hasattr(self._client, "rerank"):
            import botocore

            raise RerankUnavailable(
                f"botocore {botocore.__version__} has no bedrock-agent-runtime Rerank: the layer needs a newer boto3"
            )
        return self._client

    def grades(self, query: str, passages: Sequence[str]) -> list[float]:
        deadline = time.monotonic() + self.timeout_seconds
        scores: list[float] = []
        for start in range(0, len(passages), SOURCES_PER_CALL):
            if start and time.monotonic() >= deadline:
                raise TimeoutError(f"Rerank scored {start} of {len(passages)} passages within {self.timeout_seconds} s")
            batch = passages[start : start + SOURCES_PER_CALL]
            response = self.client.rerank(**rerank_request(self.model, query, batch))
            scores += batch_scores(response, len(batch))
        return scores
