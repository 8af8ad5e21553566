"""Every provider reads the index text of what it is given (``rag.index_text``).

One wrapper, so that chunk sizing, ingest, the backfill stages and queries all embed and
count the same text whatever the provider.
"""

from __future__ import annotations

from collections.abc import Sequence

from rag.embedding.base import Embedder
from rag.index_text import index_text


class IndexTextEmbedder:
    """``inner`` with transcript markers removed from every text it embeds or counts."""

    def __init__(self, inner: Embedder):
        self.inner = inner
        self.model_id = inner.model_id
        self.dimension = inner.dimension
        self.max_input_tokens = inner.max_input_tokens

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(index_text(text))

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.inner.embed([embedding_input(text) for text in texts])


def embedding_input(text: str) -> str:
    """What the model reads of ``text``; a text that is nothing but markers keeps them: providers reject empty input."""
    return index_text(text).strip() or text
