"""The metrics on hand-computed cases (the definitions of ../shared/eval/README.md)."""

from __future__ import annotations

import math

import pytest

from rag_local.evaluation.metrics import Hit, aggregate, score_query


def test_first_relevant_hit_at_rank_three():
    hits = [Hit("m1", 0, 5), Hit("m2", 10, 20), Hit("m1", 18, 25), Hit("m1", 5, 9), Hit("m1", 20, 30)]
    scores = score_query("m1", [(10, 20)], hits)
    assert scores["recall@1"] == 0 and scores["recall@5"] == 1
    assert scores["mrr@10"] == pytest.approx(1 / 3)
    # the same gold span hit again at rank 5 gains nothing
    assert scores["ndcg@10"] == pytest.approx(1 / math.log2(4))
    assert scores["coverage@10"] == pytest.approx(3 / 11)  # turns 18-20 of 10-20
    assert scores["precision@10"] == pytest.approx(2 / 5)
    assert scores["hit_turns@10"] == pytest.approx((6 + 11 + 8 + 5 + 11) / 5)


def test_one_hit_covering_two_gold_spans_is_credited_once():
    hits = [Hit("m5", 0, 9), Hit("m5", 35, 44), Hit("x", 30, 49), Hit("m5", 49, 49)]
    scores = score_query("m5", [(30, 39), (40, 49)], hits)
    assert scores["mrr@10"] == 0.5
    assert scores["ndcg@10"] == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))
    assert scores["coverage@10"] == pytest.approx(11 / 20)


def test_only_the_top_ten_count_and_reversed_ranges_are_normalised():
    late = [Hit("m", i, i) for i in range(10)] + [Hit("m", 100, 100)]
    assert score_query("m", [(100, 110)], late)["recall@10"] == 0
    assert score_query("m", [(0, 1)], [Hit("m", 1, 0)])["mrr@10"] == 1.0


def test_no_hits_scores_zero_and_aggregates_per_project():
    empty = score_query("m", [(0, 4)], [])
    assert all(value == 0 for value in empty.values())
    summary = aggregate([("A", {**empty, "mrr@10": 1.0}), ("A", empty), ("B", empty)])
    assert summary["overall"]["mrr@10"] == pytest.approx(1 / 3) and summary["overall"]["n"] == 3
    assert summary["per_domain"]["A"]["mrr@10"] == 0.5 and summary["per_domain"]["B"]["n"] == 1
