"""The id rows record names the vectors' space: the model, and its size when shortened."""

from __future__ import annotations

import pytest

from rag.config import Settings
from rag.embedding.model_id import embedding_model_id


@pytest.mark.parametrize(
    ("provider", "model", "dimension", "quantized", "expected"),
    [
        ("local", "all-MiniLM-L6-v2", 384, False, "local/all-MiniLM-L6-v2"),
        ("local", "all-MiniLM-L6-v2", 384, True, "local/all-MiniLM-L6-v2-int8"),
        ("openai", "text-embedding-3-small", 1536, False, "openai/text-embedding-3-small"),
        ("openai", "text-embedding-3-small", 512, False, "openai/text-embedding-3-small@512"),
        ("openai", "text-embedding-3-large", 1536, False, "openai/text-embedding-3-large@1536"),
        ("bedrock", "amazon.titan-embed-text-v2:0", 1024, False, "bedrock/amazon.titan-embed-text-v2:0"),
        ("bedrock", "amazon.titan-embed-text-v2:0", 256, False, "bedrock/amazon.titan-embed-text-v2:0@256"),
        ("openai", "nomic-embed-text", 768, False, "openai/nomic-embed-text@768"),  # size unknown: always named
    ],
)
def test_a_size_other_than_the_models_own_is_part_of_the_id(provider, model, dimension, quantized, expected):
    assert embedding_model_id(provider, model, dimension, quantized=quantized) == expected


def test_settings_and_every_embedder_record_the_same_id():
    from rag.embedding.bedrock import BedrockEmbedder
    from rag.embedding.openai import OpenAIEmbedder

    openai = Settings(embedding_provider="openai", embedding_dimension=256)
    bedrock = Settings(embedding_provider="bedrock", embedding_dimension=512)
    assert OpenAIEmbedder(openai).model_id == openai.embedding.model_id == "openai/text-embedding-3-small@256"
    assert BedrockEmbedder(bedrock).model_id == bedrock.embedding.model_id == "bedrock/amazon.titan-embed-text-v2:0@512"
