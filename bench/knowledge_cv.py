"""Knowledge extraction quality on the labelled projects, with the sentence classifier cross-validated by project.

    .venv/bin/python bench/knowledge_cv.py [bench/projects/*/ ...] [--folds 5] [--show] [--json]

``bench/knowledge_quality.py`` on ``bench/projects`` measures the offline extractor with a classifier trained on
those very sentences. Here the projects (every folder of ``bench/projects`` by default) are split into folds, every
k-th project in name order. For each fold the classifier is trained as ``make train-extractor`` trains it (on
``bench/labels`` and the other folds' projects, into a temporary file; ``../shared/eval`` must be there) and the
fold's projects are measured with those weights. The figures over every fold together are the projects' figures on
meetings the classifier has not seen. The rule patterns were still written with these projects in view, so
``bench/heldout`` stays the measure of the extractor on unseen meetings; this one shows how much of a project
figure the classifier's training explains, and lists misses the held-out set may not be read for.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import knowledge_quality as quality

PROJECTS = Path(__file__).resolve().parent / "projects"
FOLD_IDS = 10**9  # fold k's item ids are offset by k times this


def folds_of(folders: Sequence[Path], folds: int) -> list[list[Path]]:
    """Every ``folds``-th project in name order, ``folds`` groups (fewer when there are fewer projects)."""
    ordered = sorted(folders, key=lambda folder: folder.name)
    return [group for group in (ordered[k::folds] for k in range(folds)) if group]


def measure_fold(
    measured: Sequence[Path], trained_on: Sequence[Path], batch_size: int
) -> tuple[list[quality.Label], list[quality.Extracted]]:
    """The fold's projects measured with a classifier trained without them."""
    import train_extractor

    from rag.backfill import classifier

    shipped = classifier.DEFAULT_MODEL
    with tempfile.TemporaryDirectory() as folder:
        weights = Path(folder) / "sentence_model.json"
        train_extractor.main(["--projects", *map(str, trained_on), "--out", str(weights), "--folds", "2"])
        classifier.DEFAULT_MODEL = weights  # what load_model reads when no path is given
        try:
            return quality.measure(measured, keep_llm=False, batch_size=batch_size)
        finally:
            classifier.DEFAULT_MODEL = shipped


def renumbered(item: quality.Extracted, offset: int) -> quality.Extracted:
    """An item with ids no other fold's database gave (each fold numbers its rows from 1)."""
    successor = None if item.superseded_by is None else item.superseded_by + offset
    return replace(item, id=item.id + offset, superseded_by=successor)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("projects", type=Path, nargs="*", help="labelled project folders (default: bench/projects/*)")
    parser.add_argument("--folds", type=int, default=5, help="how many groups of projects to hold out in turn")
    parser.add_argument("--batch-size", type=int, default=10)
    parser.add_argument("--show", action="store_true", help="also list the missed labels and the false positives")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON (progress goes to stderr)")
    args = parser.parse_args(argv)
    folders = args.projects or sorted(p for p in PROJECTS.iterdir() if (p / "labels.jsonl").is_file())
    groups = folds_of(folders, args.folds)
    if len(groups) < 2:
        print("cross-validation needs at least two projects", file=sys.stderr)
        return 1
    if args.json:
        sys.stdout = sys.stderr
    labels: list[quality.Label] = []
    extracted: list[quality.Extracted] = []
    for number, group in enumerate(groups, 1):
        print(f"fold {number} of {len(groups)}: {', '.join(folder.name for folder in group)}", flush=True)
        fold_labels, fold_items = measure_fold(group, [f for f in folders if f not in group], args.batch_size)
        labels += fold_labels
        extracted += [renumbered(item, number * FOLD_IDS) for item in fold_items]
    matching = quality.match(labels, extracted)
    figures = quality.score(labels, extracted, matching)
    if args.json:
        sys.stdout = sys.__stdout__
        print(json.dumps(figures, indent=2))
        return 0
    print(f"\nall folds: {len(labels)} labels, {len(extracted)} extracted items, {len(matching.neutral)} on later mentions")
    print("\n".join(quality.format_table(figures)))
    if args.show:
        quality.print_details(labels, matching)
    return 0


if __name__ == "__main__":
    sys.exit(main())
