from __future__ import annotations

import json
import math

import boto3
import pytest
from moto import mock_aws

from rag.config import Settings
from rag.embedding.openai import OpenAIEmbedder
from rag.errors import EmbeddingError
from tests.embedding.fake_openai import FakeOpenAI, vector_for


def embedder(fake: FakeOpenAI, monkeypatch, **overrides) -> OpenAIEmbedder:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    settings = Settings(embedding_provider="openai", openai_base_url=fake.base_url, embedding_max_retries=3, **overrides)
    return OpenAIEmbedder(settings)


def test_batches_and_returns_vectors_in_input_order(monkeypatch):
    texts = [f"chunk number {i}" for i in range(5)]
    with FakeOpenAI(shuffle=True) as fake:
        vectors = embedder(fake, monkeypatch, embedding_batch_size=2).embed(texts)
    assert len(fake.requests) == 3  # 2 + 2 + 1
    assert [r["body"]["input"] for r in fake.requests] == [texts[0:2], texts[2:4], texts[4:5]]
    assert fake.requests[0]["body"]["model"] == "text-embedding-3-small"
    assert fake.requests[0]["auth"] == "Bearer sk-test-not-a-real-key"
    assert "dimensions" not in fake.requests[0]["body"]
    for text, vector in zip(texts, vectors):
        assert vector == pytest.approx(vector_for(text, 1536), abs=1e-6)


def test_429_twice_then_success_is_retried_by_the_sdk(monkeypatch):
    with FakeOpenAI() as fake:
        fake.fail_next = [429, 429]
        vectors = embedder(fake, monkeypatch).embed(["hello"])
    assert len(fake.requests) == 3
    assert math.isclose(sum(v * v for v in vectors[0]), 1.0, rel_tol=1e-5)


def test_persistent_5xx_raises_embedding_error_after_the_retries(monkeypatch):
    with FakeOpenAI() as fake:
        fake.fail_next = [500] * 10
        with pytest.raises(EmbeddingError, match=r"HTTP 500 after retries"):
            embedder(fake, monkeypatch).embed(["hello"])
    assert len(fake.requests) == 4  # first try + max_retries (3)


def test_an_input_the_api_refuses_is_a_permanent_error_and_throttling_is_not(monkeypatch):
    from rag.errors import is_transient

    with FakeOpenAI() as fake:
        fake.fail_next = [400]
        with pytest.raises(EmbeddingError) as refused:
            embedder(fake, monkeypatch).embed(["hello"])
        fake.fail_next = [429] * 10
        with pytest.raises(EmbeddingError) as throttled:
            embedder(fake, monkeypatch).embed(["hello"])
    assert not is_transient(refused.value) and "HTTP 400" in str(refused.value)
    assert is_transient(throttled.value)


def test_dimensions_are_sent_only_when_they_differ_from_the_model(monkeypatch):
    with FakeOpenAI() as fake:
        vectors = embedder(fake, monkeypatch, embedding_dimension=512).embed(["hello"])
    assert fake.requests[0]["body"]["dimensions"] == 512 and len(vectors[0]) == 512


def test_key_comes_from_secrets_manager_when_configured(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with mock_aws(), FakeOpenAI() as fake:
        boto3.client("secretsmanager", region_name="us-east-1").create_secret(
            Name="rag/openai", SecretString=json.dumps({"api_key": "sk-from-secrets-manager"})
        )
        settings = Settings(embedding_provider="openai", openai_base_url=fake.base_url, openai_api_key_secret="rag/openai")
        OpenAIEmbedder(settings).embed(["hello"])
    assert fake.requests[0]["auth"] == "Bearer sk-from-secrets-manager"


def test_missing_key_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(EmbeddingError, match="OPENAI_API_KEY"):
        OpenAIEmbedder(Settings(embedding_provider="openai")).embed(["hello"])


def test_token_counts_use_cl100k():
    e = OpenAIEmbedder(Settings(embedding_provider="openai"))
    assert e.count_tokens("hello world") == 2 and e.max_input_tokens == 8191
