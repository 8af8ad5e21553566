"""Turn-span retrieval metrics, as ../shared/eval/README.md defines them.

A hit is relevant when it comes from the query's meeting and its turn range overlaps
a gold range. Per query: recall@1/5/10, MRR@10, nDCG@10 (gold spans are the relevant
items: a hit gains 1 only for a span no higher hit has overlapped), coverage@10 (gold
turns covered by relevant hits), precision@10 and the mean hit size in turns; then
macro-averaged over queries, overall and per project.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

K = 10
METRICS = ("recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10", "coverage@10", "precision@10", "hit_turns@10")


@dataclass(frozen=True)
class Hit:
    meeting_id: str
    start_turn: int
    end_turn: int
    score: float = 0.0

    @property
    def span(self) -> tuple[int, int]:
        return (min(self.start_turn, self.end_turn), max(self.start_turn, self.end_turn))


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def score_query(meeting_id: str, gold: Sequence[tuple[int, int]], hits: Sequence[Hit]) -> dict[str, float]:
    """Every metric of one query's ranked hits (only the first ``K`` count)."""
    spans = [(min(s, e), max(s, e)) for s, e in gold]
    gold_turns = {t for s, e in spans for t in range(s, e + 1)}
    relevant: list[bool] = []
    gains: list[int] = []
    credited: set[int] = set()
    covered: set[int] = set()
    for hit in hits[:K]:
        overlapped = {i for i, g in enumerate(spans) if _overlaps(hit.span, g)} if hit.meeting_id == meeting_id else set()
        relevant.append(bool(overlapped))
        gains.append(1 if overlapped - credited else 0)
        credited |= overlapped
        if overlapped:
            covered |= gold_turns.intersection(range(hit.span[0], hit.span[1] + 1))
    first = next((rank for rank, rel in enumerate(relevant, 1) if rel), None)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(K, len(spans))))
    sizes = [h.span[1] - h.span[0] + 1 for h in hits[:K]]
    return {
        **{f"recall@{k}": float(any(relevant[:k])) for k in (1, 5, 10)},
        "mrr@10": 1 / first if first else 0.0,
        "ndcg@10": sum(g / math.log2(i + 2) for i, g in enumerate(gains)) / ideal if ideal else 0.0,
        "coverage@10": len(covered) / len(gold_turns) if gold_turns else 0.0,
        "precision@10": sum(relevant) / len(relevant) if relevant else 0.0,
        "hit_turns@10": sum(sizes) / len(sizes) if sizes else 0.0,
    }


def mean_scores(rows: Iterable[dict[str, float]]) -> dict[str, float]:
    rows = list(rows)
    means = {m: sum(r[m] for r in rows) / len(rows) if rows else 0.0 for m in METRICS}
    return {**means, "n": len(rows)}


def aggregate(per_query: Sequence[tuple[str, dict[str, float]]]) -> dict[str, object]:
    """Overall and per-project means of (project, metrics) rows; the shape score.py writes."""
    by_project: dict[str, list[dict[str, float]]] = defaultdict(list)
    for project, row in per_query:
        by_project[project].append(row)
    return {
        "overall": mean_scores(row for _, row in per_query),
        "per_domain": {project: mean_scores(rows) for project, rows in sorted(by_project.items())},
    }
