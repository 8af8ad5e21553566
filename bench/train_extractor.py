"""Train the sentence classifier of item kinds (rag.backfill.classifier) on bench/labels and bench/projects; evaluate it first.

Reads the labelled references (bench/labels/labels.jsonl) and the sentences' text from the shared evaluation
transcripts, and the labelled projects of bench/projects (each project one group), computes the classifier's
features, and:

1. cross-validates by meeting (GroupKFold on meeting_id): one logistic regression per kind, trained on the other
   meetings' sentences (both samples), scored on the held-out meetings' "full" sentences only (the unbiased
   sample); the threshold applied to a held-out fold is chosen on the training meetings alone (an inner grouped
   cross-validation), so the reported precision/recall is not tuned on the sentences it is measured on;
2. chooses each kind's threshold on all meetings' out-of-fold probabilities: the lowest threshold whose precision
   reaches the kind's target, or, where none does, the one of best F0.5;
3. trains on every labelled sentence and writes the weights, thresholds and the cross-validated figures to
   layers/rag/backfill/sentence_model.json.

    .venv/bin/python bench/train_extractor.py                 # evaluate, then write the weights
    .venv/bin/python bench/train_extractor.py --no-write      # evaluate only
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "layers"))
sys.path.insert(0, str(ROOT / "bench" / "labels"))

from project_sentences import project_sentences  # noqa: E402
from sentences import DEFAULT_EVAL, DEFAULT_LABELS, meeting_sentences  # noqa: E402

from rag.backfill.classifier import DEFAULT_MODEL, FEATURE_SET, features  # noqa: E402
from rag.backfill.rules import classify  # noqa: E402


def rule_kinds(text: str) -> frozenset[str]:
    return frozenset(match.kind for match in classify(text))


KINDS = ("decision", "risk", "task", "opportunity")
# Precision each kind's threshold aims for (the targets the offline extractor is measured against).
TARGET_PRECISION = {"decision": 0.80, "risk": 0.70, "task": 0.85, "opportunity": 0.70}
MIN_HITS = 5  # a threshold's precision counts when it keeps at least this many right sentences
PRECISION_FLOOR = 0.6  # below its target, a kind's classifier is used only at this precision or more
OFF = 1.01  # a threshold no probability reaches
MIN_FEATURE_COUNT = 3  # a feature seen in fewer training sentences gets no weight (noise, and file size)
C = 0.5  # inverse L2 strength, chosen by the cross-validation below (see --c)
WEIGHT_DIGITS = 3


DEFAULT_PROJECTS = ROOT / "bench" / "projects"
PROJECT_WEIGHT = 3.0  # a bench/projects sentence counts this many times in training (see --project-weight)
# bench/projects' sentences are trained on (and measured with each project held out whole): the projects are the
# tuning set, and bench/heldout, never trained on, is where the extractor is measured unseen. --no-train-on-projects
# leaves them out of training.
TRAIN_ON_PROJECTS = True
MEASURED = {"full", "project"}  # samples precision and recall are measured on (candidates over-represent cue words)


@dataclass(frozen=True)
class Example:
    meeting_id: str  # the group cross-validation holds out together: a meeting, or a whole project
    domain: str
    sample: str  # "full" / "candidates" (bench/labels), "project" (bench/projects)
    kinds: frozenset[str]
    features: dict[str, float]
    unsure: frozenset[str] = frozenset()  # kinds this sentence is neither a positive nor a negative of
    rule_kinds: frozenset[str] = frozenset()  # the kinds rag.backfill.rules' patterns find (with the model: the extractor)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def load_examples(eval_dir: Path, labels: Path) -> list[Example]:
    rows = [json.loads(line) for line in labels.read_text(encoding="utf-8").splitlines() if line.strip()]
    by_meeting: dict[str, list[dict[str, object]]] = {}
    for row in rows:
        by_meeting.setdefault(str(row["meeting_id"]), []).append(row)
    examples: list[Example] = []
    for number, (meeting, meeting_rows) in enumerate(sorted(by_meeting.items()), 1):
        refs = list(meeting_sentences(eval_dir, meeting))
        turn_sizes = Counter(ref.turn for ref in refs)
        place: dict[tuple[int, int, int], tuple[dict[str, float], frozenset[str]]] = {}
        seen: Counter[int] = Counter()
        ref_text = {(ref.turn, ref.start, ref.end): ref.text for ref in refs}
        for index, ref in enumerate(refs):
            seen[ref.turn] += 1
            previous = refs[index - 1].text if index else None
            following = refs[index + 1].text if index + 1 < len(refs) else None
            first, last = seen[ref.turn] == 1, seen[ref.turn] == turn_sizes[ref.turn]
            place[(ref.turn, ref.start, ref.end)] = (features(ref.text, first, last, previous, following), frozenset())
        for row in meeting_rows:
            key = (int(row["turn"]), int(row["start"]), int(row["end"]))  # type: ignore[call-overload]
            if key not in place:
                raise SystemExit(f"{meeting}: {key} is not a sentence (run bench/labels/sentences.py --check)")
            label = row["label"]
            kinds = frozenset(label if isinstance(label, list) else [label]) - {"none"}
            named, _ = place[key]
            ruled = rule_kinds(ref_text[key]) if row["sample"] == "full" else frozenset()
            examples.append(Example(meeting, str(row["domain"]), str(row["sample"]), kinds, named, rule_kinds=ruled))
        log(f"[{number}/{len(by_meeting)}] {meeting}: {len(meeting_rows)} sentences")
    return examples


def load_projects(folders: Sequence[Path]) -> list[Example]:
    """bench/projects' sentences (bench/labels/project_sentences.py), each project one group."""
    examples = []
    for folder in folders:
        for row in project_sentences(folder):
            named = features(row.text, row.first_in_turn, row.last_in_turn, row.previous, row.following)
            examples.append(
                Example(f"project:{row.project}", "Projects", "project", row.kinds, named, row.unsure, rule_kinds(row.text))
            )
        log(f"project {folder.name}: {sum(1 for e in examples if e.meeting_id == f'project:{folder.name}')} sentences")
    return examples


def fit(examples: Sequence[Example], c: float):  # type: ignore[no-untyped-def]
    """A DictVectorizer over the frequent features and one LogisticRegression per kind (project sentences
    weighted ``PROJECT_WEIGHT``)."""
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression

    if not TRAIN_ON_PROJECTS:
        examples = [example for example in examples if example.sample != "project"]
    counts: Counter[str] = Counter(name for example in examples for name in example.features)
    vocabulary = sorted(name for name, count in counts.items() if count >= MIN_FEATURE_COUNT)
    vectorizer = DictVectorizer(sparse=True)
    vectorizer.fit([{name: 1.0 for name in vocabulary}])
    models = {}
    for kind in KINDS:
        # a sentence unsure for this kind (a label's context or later mention) teaches nothing about it
        rows = [example for example in examples if kind not in example.unsure]
        matrix = vectorizer.transform([example.features for example in rows])
        target = [kind in example.kinds for example in rows]
        weights = [PROJECT_WEIGHT if example.sample == "project" else 1.0 for example in rows]
        models[kind] = LogisticRegression(C=c, max_iter=2000).fit(matrix, target, sample_weight=weights)
    return vectorizer, models


def predict(fitted, examples: Sequence[Example]) -> dict[str, list[float]]:  # type: ignore[no-untyped-def]
    vectorizer, models = fitted
    matrix = vectorizer.transform([example.features for example in examples])
    return {kind: list(models[kind].predict_proba(matrix)[:, 1]) for kind in KINDS}


def out_of_fold(examples: Sequence[Example], c: float, folds: int) -> dict[str, list[float | None]]:
    """Each "full" sentence's probabilities from a model that never saw its meeting (None for candidates)."""
    from sklearn.model_selection import GroupKFold

    probabilities: dict[str, list[float | None]] = {kind: [None] * len(examples) for kind in KINDS}
    groups = [example.meeting_id for example in examples]
    for train, test in GroupKFold(n_splits=folds).split(examples, groups=groups):
        scored = [i for i in test if examples[i].sample in MEASURED]
        if not scored:
            continue
        predicted = predict(fit([examples[i] for i in train], c), [examples[i] for i in scored])
        for kind in KINDS:
            for i, p in zip(scored, predicted[kind], strict=True):
                probabilities[kind][i] = p
    return probabilities


def precision_recall(truth: Sequence[bool], probabilities: Sequence[float], threshold: float) -> tuple[float, float, int]:
    predicted = [p >= threshold for p in probabilities]
    hits = sum(1 for t, p in zip(truth, predicted, strict=True) if t and p)
    chosen, positives = sum(predicted), sum(truth)
    return (hits / chosen if chosen else 0.0), (hits / positives if positives else 0.0), positives


def choose_threshold(truth: Sequence[bool], probabilities: Sequence[float], target: float) -> float:
    """The lowest threshold reaching ``target`` precision (with at least ``MIN_HITS`` hits); where none does, the
    lowest reaching ``PRECISION_FLOOR``; where none does either, ``OFF`` (the kind is left to the patterns: the
    classifier would add more wrong items than right ones)."""
    candidates = sorted({round(p, 4) for p in probabilities if p >= 0.05})
    floor = OFF
    for threshold in candidates:
        precision, recall, _ = precision_recall(truth, probabilities, threshold)
        hits = recall * sum(truth)
        if hits < MIN_HITS:
            break
        if precision >= target:
            return threshold
        if precision >= PRECISION_FLOOR and floor == OFF:
            floor = threshold
    return floor


def full_part(examples: Sequence[Example], oof: dict[str, list[float | None]], kind: str) -> tuple[list[bool], list[float]]:
    truth, probabilities = [], []
    # thresholds are chosen on what the model is trained on: bench/projects unless --no-train-on-projects
    chosen_on = {"full", "project"} if TRAIN_ON_PROJECTS else {"full"}
    for example, p in zip(examples, oof[kind], strict=True):
        if p is not None and kind not in example.unsure and example.sample in chosen_on:
            truth.append(kind in example.kinds)
            probabilities.append(p)
    return truth, probabilities


def evaluate(examples: list[Example], c: float, folds: int) -> tuple[dict[str, float], dict[str, object]]:
    """Nested grouped cross-validation: per-kind precision/recall on held-out meetings' full sentences at
    thresholds chosen without them; then the thresholds for the final model from all out-of-fold probabilities."""
    from sklearn.model_selection import GroupKFold

    groups = [example.meeting_id for example in examples]
    held_out: dict[str, list[tuple[bool, bool, str]]] = {kind: [] for kind in KINDS}  # (truth, predicted, domain)
    with_rules: dict[str, list[tuple[bool, bool, str]]] = {kind: [] for kind in KINDS}  # the model or the patterns
    splits = list(GroupKFold(n_splits=folds).split(examples, groups=groups))
    for number, (train, test) in enumerate(splits, 1):
        started = time.monotonic()
        training = [examples[i] for i in train]
        inner = out_of_fold(training, c, folds)
        thresholds = {kind: choose_threshold(*full_part(training, inner, kind), TARGET_PRECISION[kind]) for kind in KINDS}
        scored = [examples[i] for i in test if examples[i].sample in MEASURED]
        if scored:
            predicted = predict(fit(training, c), scored)
            for kind in KINDS:
                for example, p in zip(scored, predicted[kind], strict=True):
                    if kind not in example.unsure:
                        chosen = p >= thresholds[kind]
                        held_out[kind].append((kind in example.kinds, chosen, example.domain))
                        with_rules[kind].append((kind in example.kinds, chosen or kind in example.rule_kinds, example.domain))
        meetings = sorted({examples[i].meeting_id for i in test if examples[i].sample in MEASURED})
        log(f"fold {number}/{folds}: held out {', '.join(meetings) or '(candidates only)'}; "
            f"thresholds {json.dumps(thresholds)} ({time.monotonic() - started:.0f}s)")  # fmt: skip
    report: dict[str, object] = {}
    domains = sorted({example.domain for example in examples if example.sample in MEASURED})
    for kind in KINDS:
        rows = held_out[kind]
        entry = {"all": _pr([row for row in rows if row[2] != "Projects"])}  # bench/labels' full meetings
        for domain in domains:
            entry[domain] = _pr([row for row in rows if row[2] == domain])
        combined = with_rules[kind]
        entry["all+rules"] = _pr([row for row in combined if row[2] != "Projects"])
        if any(row[2] == "Projects" for row in combined):
            entry["Projects+rules"] = _pr([row for row in combined if row[2] == "Projects"])
        report[kind] = entry
    log("choosing the final thresholds on all meetings' out-of-fold probabilities")
    oof = out_of_fold(examples, c, folds)
    final = {kind: choose_threshold(*full_part(examples, oof, kind), TARGET_PRECISION[kind]) for kind in KINDS}
    return final, report


def _pr(rows: Sequence[tuple[bool, bool, str]]) -> dict[str, float | int]:
    hits = sum(1 for truth, predicted, _ in rows if truth and predicted)
    chosen = sum(1 for _, predicted, _ in rows if predicted)
    positives = sum(1 for truth, _, _ in rows if truth)
    return {
        "precision": round(hits / chosen, 3) if chosen else 0.0,
        "recall": round(hits / positives, 3) if positives else 0.0,
        "positives": positives,
        "predicted": chosen,
    }


def export(fitted, thresholds: dict[str, float], report: dict[str, object], examples: Sequence[Example]) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """The weights file: features with a non-zero rounded weight for some kind, one weight per kind."""
    vectorizer, models = fitted
    names = vectorizer.get_feature_names_out()
    weights: dict[str, list[float]] = {}
    for column, name in enumerate(names):
        row = [round(float(models[kind].coef_[0][column]), WEIGHT_DIGITS) for kind in KINDS]
        if any(row):
            weights[str(name)] = row
    counts = Counter(kind for example in examples for kind in example.kinds)
    return {
        "feature_set": FEATURE_SET,
        "kinds": list(KINDS),
        "intercepts": [round(float(models[kind].intercept_[0]), WEIGHT_DIGITS) for kind in KINDS],
        "thresholds": {kind: round(thresholds[kind], 4) for kind in KINDS},
        "target_precision": TARGET_PRECISION,
        "trained_on": {"sentences": len(examples), "meetings": len({e.meeting_id for e in examples}), **counts},
        "cross_validation": report,
        "weights": dict(sorted(weights.items())),
    }


def print_report(report: dict[str, object], thresholds: dict[str, float]) -> None:
    print("Grouped cross-validation by meeting, held-out 'full' sentences, thresholds chosen on training meetings:")
    print(f"{'kind':<12} {'scope':<10} {'precision':>9} {'recall':>7} {'positives':>9} {'predicted':>9}")
    for kind in KINDS:
        for scope, pr in report[kind].items():  # type: ignore[attr-defined]
            print(
                f"{kind:<12} {scope:<10} {pr['precision']:>9.3f} {pr['recall']:>7.3f} {pr['positives']:>9} {pr['predicted']:>9}"
            )
    print("final thresholds: " + ", ".join(f"{kind} {thresholds[kind]:.3f}" for kind in KINDS))


def main(argv: Sequence[str] | None = None) -> int:
    global PROJECT_WEIGHT, TRAIN_ON_PROJECTS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval", type=Path, default=DEFAULT_EVAL, help="the shared evaluation set (transcripts/)")
    parser.add_argument("--labels", type=Path, default=DEFAULT_LABELS, help="labelled references (jsonl)")
    parser.add_argument("--out", type=Path, default=DEFAULT_MODEL, help="the weights file to write")
    parser.add_argument("--folds", type=int, default=5, help="grouped cross-validation folds")
    parser.add_argument("--c", type=float, default=C, help="inverse L2 regularisation strength")
    parser.add_argument("--no-write", action="store_true", help="evaluate only; do not write the weights file")
    parser.add_argument("--projects", type=Path, nargs="*", default=None,
                        help="labelled project folders to train and measure on, each held "
                        "out whole in cross-validation (default: every folder of bench/projects; --projects alone: none)")  # fmt: skip
    parser.add_argument("--no-train-on-projects", dest="train_on_projects", action="store_false",
                        help="measure on the projects' sentences but train on bench/labels' only")  # fmt: skip
    parser.add_argument("--project-weight", type=float, default=PROJECT_WEIGHT, help="a project sentence's weight")
    args = parser.parse_args(argv)
    PROJECT_WEIGHT = args.project_weight
    TRAIN_ON_PROJECTS = args.train_on_projects

    if not (args.eval / "transcripts").is_dir():
        raise SystemExit(f"no transcripts under {args.eval} (the shared evaluation set)")
    log(f"reading {args.labels}")
    examples = load_examples(args.eval, args.labels)
    folders = sorted(p for p in DEFAULT_PROJECTS.iterdir() if p.is_dir()) if args.projects is None else args.projects
    examples += load_projects(folders)
    log(f"{len(examples)} sentences; cross-validating ({args.folds} folds, nested)")
    thresholds, report = evaluate(examples, args.c, args.folds)
    print_report(report, thresholds)
    if args.no_write:
        return 0
    log("training on every labelled sentence")
    model = export(fit(examples, args.c), thresholds, report, examples)
    args.out.write_text(json.dumps(model, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({args.out.stat().st_size / 1024:.0f} KiB, {len(model['weights'])} features)")  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
