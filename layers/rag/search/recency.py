"""Newer meetings first at equal relevance: an optional, bounded bonus for recency.

``RAG_RECENCY_HALF_LIFE_DAYS`` (off by default) gives each hit a bonus of
``RAG_RECENCY_WEIGHT`` x the spread of the candidates' scores x 0.5^(age / half-life),
where age is counted in days back from the newest meeting among the candidates (not
from today: an archive searched years later still tells its newer meetings apart).
The bonus is at most ``weight`` x the spread, so two hits change places only when their
scores were that close: recency breaks near-ties, it never outranks a clearly better
match. Hits without a meeting date get no bonus.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rag.search.engine import Hit


def meeting_date(hit: Hit) -> date | None:
    value = hit.metadata.get("meeting_date")
    if isinstance(value, date):
        return value
    return date.fromisoformat(value) if isinstance(value, str) and value else None


def favour_recent(ranked: list[tuple[str, Hit]], *, half_life_days: float, weight: float) -> list[tuple[str, Hit]]:
    """``ranked`` reordered by score plus the recency bonus (scores updated), best first."""
    dates = [meeting_date(hit) for _, hit in ranked]
    known = [d for d in dates if d is not None]
    if len(ranked) < 2 or not known or half_life_days <= 0:
        return ranked
    newest = max(known)
    scores = [hit.score for _, hit in ranked]
    bound = weight * (max(scores) - min(scores))
    rescored = []
    for position, ((type_name, hit), day) in enumerate(zip(ranked, dates)):
        bonus = bound * 0.5 ** ((newest - day).days / half_life_days) if day is not None else 0.0
        rescored.append((-(hit.score + bonus), position, type_name, replace(hit, score=hit.score + bonus)))
    rescored.sort(key=lambda item: item[:2])
    return [(type_name, hit) for _, _, type_name, hit in rescored]
