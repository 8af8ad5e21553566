"""One ranked list from the hits of several types (``search_all_knowledge`` is all six types).

Scores of different tables are not on one scale: BM25 depends on each table's own
statistics (a term is rare among decisions and common among chunks), and a per-type
RRF score only says where a hit stood within its type. What is comparable:

- cosine similarity: one model embedded every row and the query, so similarities of a
  chunk and of a decision answer the same question;
- ranks within a type's keyword list.

- BM25 scores within a type, scaled to 0..1 over the type's keyword list.

So the lists are merged as one type's are (``FusionWeights.method``): convex fusion of
the similarity scaled over the *global* semantic list (every semantic hit of every type)
and each type's scaled BM25; or reciprocal rank fusion of the global semantic list,
ordered by cosine similarity, and the per-type keyword lists (k and weights as for one type). In semantic mode that reduces to ordering by similarity,
and the score stays the similarity; in keyword mode to interleaving the types by keyword
rank, ties (equal ranks in different types) going to the higher BM25 score. One type
alone keeps its own order and scores untouched.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rag.search.engine import FusionWeights, Hit, Mode


def merge_types(hits_by_type: Mapping[str, list[Hit]], *, mode: Mode, top_k: int, fusion: FusionWeights) -> list[tuple[str, Hit]]:
    """(type, hit) pairs, best first, at most ``top_k``."""
    pairs = [(type_name, hit) for type_name, hits in hits_by_type.items() for hit in hits]
    if len(hits_by_type) <= 1:
        return pairs[:top_k]
    if mode == "semantic":
        pairs.sort(key=lambda pair: (-(pair[1].similarity or 0.0), pair[0], pair[1].id))
        return pairs[:top_k]
    on_semantic_side = sorted(
        (pair for pair in pairs if pair[1].semantic_rank is not None and pair[1].similarity is not None),
        key=lambda pair: -pair[1].similarity,  # type: ignore[operator]
    )
    if fusion.method == "convex":
        scores = _convex_scores(pairs, on_semantic_side, fusion)
    else:
        scores = _rrf_scores(pairs, on_semantic_side, fusion)
    fused = [(score, hit.score, type_name, replace(hit, score=score)) for score, (type_name, hit) in zip(scores, pairs)]
    fused.sort(key=lambda item: (-item[0], -item[1], item[2], item[3].id))
    return [(type_name, hit) for _, _, type_name, hit in fused[:top_k]]


Pairs = list[tuple[str, "Hit"]]


def _rrf_scores(pairs: Pairs, on_semantic_side: Pairs, fusion: FusionWeights) -> list[float]:
    global_semantic_rank = {(t, h.id): rank for rank, (t, h) in enumerate(on_semantic_side, start=1)}
    scores = []
    for type_name, hit in pairs:
        score = 0.0
        if (semantic_rank := global_semantic_rank.get((type_name, hit.id))) is not None:
            score += fusion.semantic / (fusion.rrf_k + semantic_rank)
        if hit.keyword_rank is not None:
            score += fusion.keyword / (fusion.rrf_k + hit.keyword_rank)
        scores.append(score)
    return scores


def _convex_scores(pairs: Pairs, on_semantic_side: Pairs, fusion: FusionWeights) -> list[float]:
    similarity = _scaled({(t, h.id): h.similarity or 0.0 for t, h in on_semantic_side})
    keyword: dict[tuple[str, int], float] = {}
    for type_name in dict.fromkeys(t for t, _ in pairs):
        keyword |= _scaled({(t, h.id): h.keyword_score for t, h in pairs if t == type_name and h.keyword_score is not None})
    share = fusion.semantic_share
    return [share * similarity.get((t, h.id), 0.0) + (1.0 - share) * keyword.get((t, h.id), 0.0) for t, h in pairs]


def _scaled(values: dict[tuple[str, int], float]) -> dict[tuple[str, int], float]:
    """Min-max scaling to 0..1 (1 when every value is alike), as the SQL of one type does."""
    if not values:
        return {}
    low, high = min(values.values()), max(values.values())
    return {key: (value - low) / (high - low) if high > low else 1.0 for key, value in values.items()}
