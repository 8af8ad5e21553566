"""The sentence classifier's training script: its threshold policy and the sentences it reads from labelled projects."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TINY_PROJECT = ROOT / "tests" / "fixtures" / "backfill" / "tiny_project"


@pytest.fixture(scope="module")
def trainer():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import train_extractor
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return train_extractor


def test_the_threshold_is_the_lowest_reaching_the_target_precision(trainer):
    # scores 0.95..0.10; the six highest are right, then wrong and right alternate
    probabilities = [0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.6, 0.55, 0.5, 0.45, 0.1]
    truth = [True] * 6 + [False, True, False, True, False]
    assert trainer.choose_threshold(truth, probabilities, target=0.8) == 0.45  # 8 right of 10; at 0.1, 8 of 11


def test_below_the_target_the_floor_is_used_and_below_the_floor_the_kind_is_off(trainer):
    probabilities = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.15, 0.1]
    truth = [True, False, True, False, True, False, True, True, False, True]
    # precision never reaches 0.9 with five right (3 of 5 at 0.5); the floor, 0.6, at 0.1 (6 of 10)
    assert trainer.choose_threshold(truth, probabilities, target=0.9) == 0.1
    mostly_wrong = [True, False, False, True, False, False, True, False, False, True, False, True]
    assert trainer.choose_threshold(mostly_wrong, [1 - i / 20 for i in range(12)], target=0.9) == trainer.OFF
    assert trainer.OFF > 1.0


def test_a_projects_sentences_take_their_labels_kinds(trainer):
    rows = trainer.project_sentences(TINY_PROJECT)
    by_text = {row.text: row for row in rows}
    decision = by_text["Then we book the hall on Main Street."]
    assert decision.kinds == {"decision"} and decision.unsure == {"task"} and decision.speaker == "Nora Diaz"
    assert decision.first_in_turn and not decision.last_in_turn
    assert decision.previous == "It's also cheaper than the hotel."
    assert by_text["Leo, can you confirm it with them by Friday?"].kinds == {"task"}
    assert by_text["If the caterer cancels again, we have nothing for two hundred guests."].kinds == {"risk"}
    # the task's place spans the answer: neither a task nor a non-task; nor is a later mention ("done")
    assert by_text["I'll call them tomorrow."].kinds == set() and by_text["I'll call them tomorrow."].unsure == {"task"}
    assert by_text["Leo called them on the 5th."].unsure == {"task"}
    assert (
        by_text["The hall on Main Street is free in June."].kinds
        == set()
        == by_text["The hall on Main Street is free in June."].unsure
    )
    # lines under "## Decisions" become items directly: the classifier never reads them
    assert not any("Green Fork" in row.text for row in rows)
