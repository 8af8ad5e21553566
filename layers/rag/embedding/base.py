"""The one small interface every embedding provider implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors with one model.

    ``model_id`` is what rows record (``provider/model``): a search only compares
    vectors that carry the same ``model_id``.
    """

    model_id: str
    dimension: int
    max_input_tokens: int  # the model reads at most this many tokens (special tokens excluded)

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` with the model's own tokenizer (special tokens excluded)."""
        ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for ``texts`` in order; batches and retries internally."""
        ...
