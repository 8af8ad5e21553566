"""Merging the hits of several types into one ranking (pure: no database)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rag.search.engine import FusionWeights, Hit
from rag.search.fusion import merge_types

WEIGHTS = FusionWeights(rrf_k=60, method="rrf")


def hit(id: int, score: float, similarity: float | None, semantic_rank: int | None, keyword_rank: int | None) -> Hit:
    return Hit(id, score, similarity, f"text {id}", "doc", "p", "s3://b/k", None, 0, 1, None, None, [],
               {}, semantic_rank, keyword_rank)  # fmt: skip


def test_one_type_keeps_its_own_order_and_scores():
    hits = [hit(1, 9.5, None, None, 1), hit(2, 7.0, None, None, 2), hit(3, 1.0, None, None, 3)]
    assert merge_types({"chunk": hits}, mode="keyword", top_k=2, fusion=WEIGHTS) == [("chunk", hits[0]), ("chunk", hits[1])]


def test_semantic_orders_every_type_by_cosine_similarity():
    chunks = [hit(1, 0.61, 0.61, 1, None), hit(2, 0.40, 0.40, 2, None)]
    risks = [hit(1, 0.72, 0.72, 1, None), hit(5, 0.30, 0.30, 2, None)]
    merged = merge_types({"chunk": chunks, "risk": risks, "task": []}, mode="semantic", top_k=3, fusion=WEIGHTS)
    assert [(t, h.id) for t, h in merged] == [("risk", 1), ("chunk", 1), ("chunk", 2)]
    assert [h.score for _, h in merged] == [0.72, 0.61, 0.40]


def test_hybrid_fuses_the_global_similarity_rank_with_each_type_keyword_rank():
    # The decision is second by similarity across types and first among decisions by keyword:
    # it beats the chunk that is first by similarity but absent from the keyword side.
    chunks = [hit(10, 0.016, 0.70, 1, None), hit(11, 0.032, 0.50, 2, 1)]
    decisions = [hit(20, 0.033, 0.65, 1, 1)]
    merged = merge_types({"chunk": chunks, "decision": decisions}, mode="hybrid", top_k=3, fusion=WEIGHTS)
    assert [(t, h.id) for t, h in merged] == [("decision", 20), ("chunk", 11), ("chunk", 10)]
    assert merged[0][1].score == pytest.approx(1 / 62 + 1 / 61)  # similarity rank 2 of 3, keyword rank 1
    assert merged[1][1].score == pytest.approx(1 / 63 + 1 / 61)
    assert merged[2][1].score == pytest.approx(1 / 61)


def test_keyword_interleaves_types_by_rank_and_breaks_ties_by_bm25():
    chunks = [hit(1, 4.0, None, None, 1), hit(2, 3.0, None, None, 2)]
    tasks = [hit(7, 6.5, None, None, 1)]
    merged = merge_types({"chunk": chunks, "task": tasks}, mode="keyword", top_k=10, fusion=WEIGHTS)
    assert [(t, h.id) for t, h in merged] == [("task", 7), ("chunk", 1), ("chunk", 2)]
    assert all(h.similarity is None for _, h in merged)


def test_a_row_below_the_threshold_gets_no_semantic_credit():
    # Found by keyword only: it has a similarity but no semantic rank (the threshold cut it).
    chunks = [hit(1, 0.016, 0.10, None, 1)]
    risks = [hit(2, 0.016, 0.60, 1, None)]
    merged = merge_types({"chunk": chunks, "risk": risks}, mode="hybrid", top_k=2, fusion=WEIGHTS)
    assert [h.score for _, h in merged] == pytest.approx([1 / 61, 1 / 61])
    assert [(t, h.id) for t, h in merged] == [("chunk", 1), ("risk", 2)]  # a tie: then by type name


def test_convex_merges_similarity_over_all_types_and_bm25_within_each_type():
    convex = FusionWeights(method="convex", semantic_share=0.5)
    # Similarity scaled over both types' semantic hits (0.40 .. 0.80); BM25 scaled within each type.
    chunks = [hit(1, 0.0, 0.80, 1, None), hit(2, 0.0, 0.40, 2, 1)]
    chunks = [replace(chunks[0]), replace(chunks[1], keyword_score=12.0)]
    risks = [replace(hit(7, 0.0, 0.60, 1, 1), keyword_score=3.0), replace(hit(8, 0.0, None, None, 2), keyword_score=1.0)]

    merged = merge_types({"chunk": chunks, "risk": risks}, mode="hybrid", top_k=4, fusion=convex)

    scores = {(t, h.id): h.score for t, h in merged}
    assert scores == pytest.approx({("risk", 7): 0.75, ("chunk", 2): 0.5, ("chunk", 1): 0.5, ("risk", 8): 0.0})
    assert [(t, h.id) for t, h in merged][0] == ("risk", 7)
