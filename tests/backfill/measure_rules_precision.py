"""Precision (and recall) of the rule-based extractor on the hand-labelled sample.

    .venv/bin/python tests/backfill/measure_rules_precision.py

Two samples of meeting sentences written for this project, each labelled by hand with
the kinds of item it states (none for many): labelled_sentences.jsonl was written
alongside the rules (a tuning set: its numbers are an upper bound), and
labelled_sentences_heldout.jsonl after them, without changing the rules since (the
honest estimate for unseen meetings, still small: 40 sentences).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "backfill"
SAMPLE = FIXTURES / "labelled_sentences.jsonl"  # written alongside the rules (tuning set)
HELD_OUT = FIXTURES / "labelled_sentences_heldout.jsonl"  # written after the rules, never tuned on
KINDS = ("decision", "risk", "opportunity", "task")


@dataclass(frozen=True)
class Score:
    kind: str
    predicted: int
    correct: int
    labelled: int

    @property
    def precision(self) -> float:
        return self.correct / self.predicted if self.predicted else 1.0

    @property
    def recall(self) -> float:
        return self.correct / self.labelled if self.labelled else 1.0


def measure(sample: Path = SAMPLE) -> dict[str, Score]:
    from rag.backfill.rules import classify

    rows = [json.loads(line) for line in sample.read_text().splitlines() if line.strip()]
    counts = {kind: [0, 0, 0] for kind in (*KINDS, "all")}
    for row in rows:
        predicted = {match.kind for match in classify(row["text"], row["speaker"])}
        labelled = set(row["labels"])
        for kind in KINDS:
            for key in (kind, "all"):
                counts[key][0] += kind in predicted
                counts[key][1] += kind in predicted and kind in labelled
                counts[key][2] += kind in labelled
    return {kind: Score(kind, *values) for kind, values in counts.items()}


def report(sample: Path) -> str:
    lines = [f"rule-based extractor on {sample.name}",
             f"{'kind':<12} {'predicted':>9} {'correct':>8} {'labelled':>9} {'precision':>10} {'recall':>7}"]  # fmt: skip
    for score in measure(sample).values():
        lines.append(
            f"{score.kind:<12} {score.predicted:>9} {score.correct:>8} {score.labelled:>9}"
            f" {score.precision:>10.2f} {score.recall:>7.2f}"
        )
    return "\n".join(lines)


def main() -> int:
    print(report(SAMPLE) + "\n\n" + report(HELD_OUT))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    sys.exit(main())
