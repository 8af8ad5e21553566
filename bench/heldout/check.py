"""Validate held-out projects with the parser only: formats, speakers, label quotes and label counts.

    .venv/bin/python bench/heldout/check.py bench/heldout/ward-rostering-rollout [more project folders]

For each project folder, every meeting (``YYYY-MM-DD-*.txt|.vtt|.srt|.json|.md``) is parsed with
``rag.parsing.parse_document`` exactly as ``bench/knowledge_quality.py`` ingests it (turn texts for
transcripts, the lines of the text for Markdown notes) and its format, turn count and speakers are
printed. ``labels.jsonl`` is loaded with ``knowledge_quality.load_labels`` and every quote (of a
label and of its later updates) is checked against the text of its place with
``knowledge_quality.check_quotes``; task owners must be named in the project's meetings. Counts per
kind, status and superseded decisions follow. No database, no backfill, no scoring: the exit status is
1 when a problem was found.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "layers"), str(ROOT / "bench")]

import knowledge_quality as kq  # noqa: E402

from rag.parsing import parse_document  # noqa: E402

EXPECTED_FORMAT = {".txt": "transcript-txt", ".vtt": "vtt", ".srt": "srt", ".json": "json", ".md": "markdown"}


def check_project(folder: Path) -> list[str]:
    """Print what the parser makes of each meeting and the label counts; return the problems found."""
    problems: list[str] = []
    places: dict[str, list[str]] = {}
    texts: list[str] = []
    print(f"{folder.name}:")
    for path in kq.meeting_files(folder):
        parsed = parse_document(path.read_bytes(), path.name)
        meeting = f"{folder.name}/{path.name}"
        places[meeting] = [t.text for t in parsed.turns] if parsed.turns else parsed.text.split("\n")
        texts.append(parsed.text)
        speakers = list(dict.fromkeys(t.speaker for t in parsed.turns))
        size = f"{len(parsed.turns)} turns" if parsed.turns else f"{len(places[meeting])} lines"
        print(f"  {path.name}: {parsed.format}, {size}" + (f", speakers: {', '.join(speakers)}" if speakers else ""))
        if parsed.format != EXPECTED_FORMAT[path.suffix]:
            problems.append(f"{meeting}: parsed as {parsed.format}, expected {EXPECTED_FORMAT[path.suffix]}")
        if "Unknown" in speakers:
            problems.append(f"{meeting}: some turns have no speaker")
    labels = kq.load_labels(folder / "labels.jsonl")
    problems += kq.check_quotes(labels, places)
    everything = "\n".join(texts).casefold()
    entries = [json.loads(line) for line in (folder / "labels.jsonl").read_text().splitlines() if line.strip()]
    for entry in entries:
        for person in {entry.get("owner"), entry.get("assigned_to")} - {None}:
            if person.casefold() not in everything:
                problems.append(f"{entry['id']}: {person!r} is named in no meeting")
    kinds = Counter(label.kind for label in labels)
    for kind in kq.KINDS:
        mine = [label for label in labels if label.kind == kind]
        detail = Counter(label.status for label in mine if label.status)
        extra = ", ".join(f"{status} {n}" for status, n in sorted(detail.items()))
        if kind == "decision":
            extra = f"superseded {sum(1 for label in mine if label.superseded_by)}"
        if kind == "task":
            changed = Counter(u["change"] for e in entries if e["kind"] == "task" for u in e.get("updates", []))
            extra += "; updates: " + ", ".join(f"{change} {n}" for change, n in sorted(changed.items()))
        print(f"  {kind}: {kinds[kind]}" + (f" ({extra})" if extra else ""))
    for problem in problems:
        print(f"  PROBLEM {problem}")
    print(f"  {len(problems)} problems")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("projects", type=Path, nargs="+", help="project folders, each with meetings and labels.jsonl")
    args = parser.parse_args()
    found = [problem for folder in args.projects for problem in check_project(folder)]
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
