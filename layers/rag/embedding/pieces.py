"""Texts longer than a model reads whole: cut into pieces it does, and one vector made of theirs.

A topic segment (``rag.backfill.embed``, ``rag.reembed``) is embedded this way: its text in runs of lines the model
reads whole, and the segment's vector the token-weighted mean of the pieces' vectors, of unit length.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rag.chunking import pack_lines

if TYPE_CHECKING:
    from rag.embedding.base import Embedder


def weighted_mean(vectors: Sequence[Sequence[float]], weights: Sequence[float]) -> list[float]:
    total = [0.0] * len(vectors[0])
    for vector, weight in zip(vectors, weights):
        for i, value in enumerate(vector):
            total[i] += weight * value
    return total


def unit(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


def segment_pieces(body: str, start: int, end: int, embedder: Embedder) -> list[tuple[str, int]]:
    """The text ``body[start:end]`` in pieces the model reads whole, with their token counts (the mean's weights)."""
    spans = pack_lines(body, start, end, embedder.count_tokens, embedder.max_input_tokens)
    return [(body[s.start : s.end], max(1, s.tokens)) for s in spans]


def segment_vector(vectors: Sequence[Sequence[float]], weights: Sequence[int]) -> list[float]:
    """A segment's vector from its pieces' vectors: their token-weighted mean, of unit length."""
    return unit(weighted_mean(vectors, list(weights)))
