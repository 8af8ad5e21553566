"""TextTiling (Hearst, 1997) on sentence embeddings: topic boundaries between turns.

For every gap between two turns, compare the (length-weighted) mean embedding of the
``window`` turns before it with that of the ``window`` turns after it. A topic shift is
a valley of that similarity: its depth is how far the similarity climbs back on both
sides. Gaps deeper than ``mean + cutoff * stdev`` of all depths become boundaries,
deepest first, never closer than ``min_turns`` to each other or to either end. The
cutoff is relative, so a long meeting on one noisy topic is still split at its weakest
points (``min_depth`` only keeps coherent talk whole).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from rag.embedding.pieces import weighted_mean

Vector = Sequence[float]


def cosine(a: Vector, b: Vector) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def gap_similarities(vectors: Sequence[Vector], weights: Sequence[float], window: int) -> list[float]:
    """``result[g - 1]``: similarity across the gap before turn ``g`` (g = 1 .. n-1)."""
    scores = []
    for gap in range(1, len(vectors)):
        left = slice(max(0, gap - window), gap)
        right = slice(gap, min(len(vectors), gap + window))
        scores.append(cosine(weighted_mean(vectors[left], weights[left]), weighted_mean(vectors[right], weights[right])))
    return scores


def depth_scores(similarities: Sequence[float]) -> list[float]:
    depths = []
    for i, value in enumerate(similarities):
        left = value
        for j in range(i - 1, -1, -1):
            if similarities[j] < left:
                break
            left = similarities[j]
        right = value
        for j in range(i + 1, len(similarities)):
            if similarities[j] < right:
                break
            right = similarities[j]
        depths.append((left - value) + (right - value))
    return depths


def boundaries(
    vectors: Sequence[Vector],
    weights: Sequence[float],
    *,
    window: int | None = None,
    min_turns: int | None = None,
    cutoff: float = 1.0,
    min_depth: float = 0.08,
) -> list[int]:
    """Turn indexes where a new segment starts (0 excluded), in order.

    By default the window grows with the meeting (3 turns, up to 10 for 400+ turns) and a
    segment holds at least 6 turns or a twelfth of the meeting.
    """
    n = len(vectors)
    window = window or min(10, max(3, n // 40))
    min_turns = min_turns or max(6, n // 12)
    if n < 2 * min_turns:
        return []
    depths = depth_scores(gap_similarities(vectors, weights, window))
    threshold = max(min_depth, statistics.fmean(depths) + cutoff * statistics.pstdev(depths))
    chosen: list[int] = []
    for depth, gap in sorted(((d, g + 1) for g, d in enumerate(depths)), reverse=True):
        if depth < threshold:
            break
        if gap < min_turns or n - gap < min_turns or any(abs(gap - other) < min_turns for other in chosen):
            continue
        chosen.append(gap)
    return sorted(chosen)
