"""Embedding providers behind one small interface (``Embedder``).

Provider modules are imported lazily: importing ``rag.embedding`` must not pull in
torch, sentence-transformers or openai (cold starts matter in Lambda).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rag.embedding.base import Embedder

if TYPE_CHECKING:
    from rag.config import Settings

__all__ = ["Embedder", "get_embedder"]


def get_embedder(settings: Settings | None = None) -> Embedder:
    """The configured provider's embedder (reading index text), created once per process and configuration."""
    from rag.config import get_settings

    settings = settings or get_settings()
    key = (settings.embedding.model_id, settings.embedding.resolved_dimension, settings.embedding.runtime)
    if key not in _EMBEDDERS:
        from rag.embedding.index_text import IndexTextEmbedder

        _EMBEDDERS[key] = IndexTextEmbedder(_create(settings))
    return _EMBEDDERS[key]


_EMBEDDERS: dict[tuple[str, int, str], Embedder] = {}


def _create(settings: Settings) -> Embedder:
    provider = settings.embedding.provider
    if provider == "local":
        from rag.embedding.local import LocalEmbedder

        return LocalEmbedder(settings)
    if provider == "openai":
        from rag.embedding.openai import OpenAIEmbedder

        return OpenAIEmbedder(settings)
    if provider == "bedrock":
        from rag.embedding.bedrock import BedrockEmbedder

        return BedrockEmbedder(settings)
    raise ValueError(f"unknown embedding provider {provider!r}: expected local, openai or bedrock")
