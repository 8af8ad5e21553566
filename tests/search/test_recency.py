"""The recency bonus: newer meetings first at near-equal relevance, never over a clearly better match."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from rag.search.engine import Hit
from rag.search.recency import favour_recent


def hit(id: int, score: float, day: str | None) -> tuple[str, Hit]:
    metadata = {"meeting_date": day} if day else {}
    return ("chunk", Hit(id, score, None, f"text {id}", "doc", "p", "s3://b/k", None, 0, 1, None, None, [], metadata))


def test_equal_scores_put_the_newer_meeting_first_and_a_clear_lead_stands():
    ranked = [hit(1, 0.90, "2026-01-05"), hit(2, 0.60, "2026-03-01"), hit(3, 0.60, "2026-11-20"), hit(4, 0.10, None)]

    reordered = favour_recent(ranked, half_life_days=30, weight=0.05)

    assert [h.id for _, h in reordered] == [1, 3, 2, 4]
    # The newest meeting gets the whole bonus: 5% of the spread (0.90 - 0.10).
    assert dict((h.id, h.score) for _, h in reordered)[3] == 0.60 + 0.05 * 0.80


def test_a_near_tie_goes_to_the_newer_meeting_only_within_the_bonus():
    close = [hit(1, 0.61, "2026-01-01"), hit(2, 0.60, "2026-11-01"), hit(3, 0.0, "2026-11-01")]
    apart = [hit(1, 0.70, "2026-01-01"), hit(2, 0.60, "2026-11-01"), hit(3, 0.0, "2026-11-01")]

    assert [h.id for _, h in favour_recent(close, half_life_days=30, weight=0.05)][:2] == [2, 1]
    assert [h.id for _, h in favour_recent(apart, half_life_days=30, weight=0.05)][:2] == [1, 2]


def test_nothing_changes_without_dates():
    ranked = [hit(1, 0.5, None), hit(2, 0.5, None)]
    assert favour_recent(ranked, half_life_days=30, weight=0.05) == ranked


days = st.dates().map(lambda d: d.isoformat()) | st.none()


@given(
    st.lists(st.tuples(st.floats(0, 1), days), min_size=2, max_size=12),
    st.floats(1, 3650),
    st.floats(0, 0.5),
)
def test_order_changes_only_between_hits_whose_scores_were_within_the_bonus(rows, half_life, weight):
    ranked = sorted((hit(i, score, day) for i, (score, day) in enumerate(rows)), key=lambda pair: -pair[1].score)
    spread = max(s for s, _ in rows) - min(s for s, _ in rows)

    position = {h.id: p for p, (_, h) in enumerate(favour_recent(ranked, half_life_days=half_life, weight=weight))}

    for (_, a), (_, b) in itertools.combinations(ranked, 2):  # a scored at least as high as b
        if a.score - b.score > weight * spread + 1e-12:
            assert position[a.id] < position[b.id]
