"""TextTiling on vectors, and turning segment starts into contiguous turn ranges."""

from __future__ import annotations

import random

from rag.backfill.segment import ranges_from_starts
from rag.backfill.texttiling import boundaries, depth_scores


def topic_vectors(sizes: list[int], dim: int = 16, noise: float = 0.3, seed: int = 7) -> list[list[float]]:
    """Turns around one random direction per topic, like embeddings of talk on one subject."""
    rng = random.Random(seed)
    vectors = []
    for size in sizes:
        centre = [rng.gauss(0, 1) for _ in range(dim)]
        vectors += [[c + rng.gauss(0, noise) for c in centre] for _ in range(size)]
    return vectors


def test_boundaries_fall_on_the_topic_shifts():
    vectors = topic_vectors([14, 10, 16])
    assert boundaries(vectors, [1.0] * len(vectors)) == [14, 24]


def test_one_topic_has_no_boundary_and_short_meetings_are_one_segment():
    # Coherent talk (similarity dips below min_depth) is never split. A noisier single topic
    # would be: the cutoff is relative to the meeting's own depths, as in Hearst's TextTiling.
    one_topic = topic_vectors([40], noise=0.2)
    assert boundaries(one_topic, [1.0] * 40) == []
    short = topic_vectors([5, 5])
    assert boundaries(short, [1.0] * 10) == []  # below two minimum-size segments


def test_segments_never_get_shorter_than_min_turns():
    vectors = topic_vectors([8, 3, 8])
    found = boundaries(vectors, [1.0] * 19, min_turns=6)
    assert all(b >= 6 and 19 - b >= 6 for b in found)
    assert all(later - earlier >= 6 for earlier, later in zip(found, found[1:]))


def test_depth_is_how_far_similarity_climbs_back_on_both_sides():
    depths = depth_scores([0.9, 0.5, 0.8])
    assert depths[0] == depths[2] == 0.0 and abs(depths[1] - 0.7) < 1e-9


def test_ranges_cover_every_turn_once():
    assert ranges_from_starts([12, 5], 20) == [(0, 4), (5, 11), (12, 19)]
    assert ranges_from_starts([0, 25, -1], 20) == [(0, 19)]
