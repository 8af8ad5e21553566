"""Batches up to the API's token limit, and the tokenizer loaded only when a batch could reach it (a cold start's cost)."""

from __future__ import annotations

import pytest

from rag.config import Settings
from rag.embedding import openai as openai_embedding
from rag.embedding.openai import OpenAIEmbedder
from tests.embedding.fake_openai import FakeOpenAI


def embedder(fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> OpenAIEmbedder:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    return OpenAIEmbedder(Settings(embedding_provider="openai", openai_base_url=fake.base_url, embedding_max_retries=0))


def test_a_query_is_embedded_without_loading_the_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_tokenizer(text: str) -> int:
        raise AssertionError("the cl100k tokenizer was loaded (about 130 ms of a cold start) for a short input")

    monkeypatch.setattr(openai_embedding, "count_cl100k", no_tokenizer)
    with FakeOpenAI() as fake:
        [vector] = embedder(fake, monkeypatch).embed(["what did we decide about the battery?"])
    assert len(vector) == 1536 and len(fake.requests) == 1


def test_batches_are_cut_at_the_request_token_limit_by_exact_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(openai_embedding, "MAX_TOKENS_PER_REQUEST", 20)
    texts = [" ".join(["battery"] * 8)] * 5  # 8 tokens, 63 bytes each: the bytes alone would send one per request
    with FakeOpenAI() as fake:
        embedder(fake, monkeypatch).embed(texts)
    assert [len(r["body"]["input"]) for r in fake.requests] == [2, 2, 1]
