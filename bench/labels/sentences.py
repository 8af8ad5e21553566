"""Sentences of the shared evaluation transcripts, for labelling extraction kinds, and a checker of the labels.

A reference is (meeting_id, turn, start, end): line ``turn`` (0-based) of
``<eval>/transcripts/<domain>/<meeting_id>.txt``; the turn's text is the line, without its line
terminator, after the first ": " (the speaker prefix); ``start``/``end`` are character offsets into
that text as cut by ``rag.backfill.text.sentences`` (the splitter the backfill uses), so
``text[start:end]`` is the sentence. See bench/labels/README.md.

    sentences.py ES2006a                      every sentence of a meeting, with its reference
    sentences.py ES2006a --turns 100:200      only turns 100..199
    sentences.py --candidates ES2006a         only sentences with a cue of a kind (the "candidates" sample)
    sentences.py --check                      resolve every labelled reference, print counts
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "layers"))

from rag.backfill.text import sentences  # noqa: E402  (after the path is set)

DEFAULT_EVAL = ROOT.parent / "shared" / "eval"
DEFAULT_LABELS = Path(__file__).resolve().parent / "labels.jsonl"
KINDS = ("decision", "risk", "task", "opportunity", "none")
SAMPLES = ("full", "candidates")

# How the "candidates" sample was chosen: a sentence of a meeting not labelled in full is shown
# for labelling when it has one of these cues (deliberately broad: recall of the positives, not precision).
CANDIDATE_CUE = re.compile(
    r"\b(?:decid\w*|decision|agree\w*|settled?|go with|going with|go for|stick with|final\w*|let ?'s (?:go|use|have|do|say|make|keep)"
    r"|we(?: ?'ll| ?'re (?:gonna|going to)| will| are (?:gonna|going to)| have to| need to| must| should)"
    r" (?:go|use|have|make|do|keep|put|stick|take)"
    r"|risk\w*|concern\w*|worr\w*|danger\w*|problem\w*|issue|fail\w*|break\w*|could (?:be|cause|lead)|might not|won't work"
    r"|too expensive|too much|if we don't|unless|difficult|challeng\w*"
    r"|I ?'ll |I will |I ?'m (?:gonna|going to)|you ?'ll |can you|could you|would you|will you|should (?:send|look|do|check|write)"
    r"|action|next time|next meeting|next week|by (?:monday|tuesday|wednesday|thursday|friday|next|the end|tomorrow)"
    r"|send|e-?mail|report back|look into|find out|follow up|responsible|note to"
    r"|opportunit\w*|chance to|market\w*|sell\w*|save\w*|saving|cheaper|profit\w*|advantage|benefit\w*|trend\w*|demand"
    r"|recommend\w*|motion|carried|adopt\w*|approv\w*|undertak\w*|commit\w*|announc\w*|allocat\w*)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Ref:
    meeting_id: str
    domain: str
    turn: int
    start: int
    end: int
    speaker: str
    text: str


def meeting_path(eval_dir: Path, meeting_id: str) -> Path:
    found = sorted((eval_dir / "transcripts").glob(f"*/{meeting_id}.txt"))
    if not found:
        raise SystemExit(f"no transcript {meeting_id}.txt under {eval_dir / 'transcripts'}")
    return found[0]


def turn_texts(path: Path) -> list[tuple[str, str]]:
    """(speaker, text) of each line; text is what follows the first ": "."""
    turns = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        speaker, sep, text = line.partition(": ")
        if not sep:
            raise SystemExit(f"{path}:{number + 1}: no 'Speaker: ' prefix")
        turns.append((speaker, text))
    return turns


def meeting_sentences(eval_dir: Path, meeting_id: str) -> Iterator[Ref]:
    path = meeting_path(eval_dir, meeting_id)
    for turn, (speaker, text) in enumerate(turn_texts(path)):
        for s in sentences(text):
            yield Ref(meeting_id, path.parent.name, turn, s.start, s.end, speaker, s.text)


def print_sentences(eval_dir: Path, meeting_id: str, turns: range | None, candidates: bool) -> None:
    for ref in meeting_sentences(eval_dir, meeting_id):
        if turns is not None and ref.turn not in turns:
            continue
        if candidates and not CANDIDATE_CUE.search(ref.text):
            continue
        print(f"{ref.turn}\t{ref.start}\t{ref.end}\t{ref.speaker[:24]}: {ref.text}")


def check(eval_dir: Path, labels: Path) -> int:
    """Resolve every labelled reference; print counts; the number of problems found."""
    cache: dict[str, dict[tuple[int, int, int], Ref]] = {}
    problems = 0
    seen: set[tuple[str, int, int]] = set()
    by_label: Counter[str] = Counter()
    by_domain: dict[str, Counter[str]] = {}
    by_meeting: dict[str, Counter[str]] = {}
    by_sample: Counter[str] = Counter()
    for number, line in enumerate(labels.read_text(encoding="utf-8").splitlines(), 1):
        where = f"{labels.name}:{number}"
        row = json.loads(line)
        meeting = row["meeting_id"]
        if meeting not in cache:
            cache[meeting] = {(r.turn, r.start, r.end): r for r in meeting_sentences(eval_dir, meeting)}
        ref = cache[meeting].get((row["turn"], row["start"], row["end"]))
        kinds = row["label"] if isinstance(row["label"], list) else [row["label"]]
        errors = []
        if ref is None:
            errors.append(f"turn {row['turn']} [{row['start']}:{row['end']}] is not a sentence of {meeting}")
        elif ref.domain != row["domain"]:
            errors.append(f"domain {row['domain']!r}, the transcript is under {ref.domain!r}")
        if not kinds or any(k not in KINDS for k in kinds) or ("none" in kinds and len(kinds) > 1):
            errors.append(f"label {row['label']!r}: one of {KINDS} or a list of kinds other than none")
        if row.get("sample") not in SAMPLES:
            errors.append(f"sample {row.get('sample')!r}: one of {SAMPLES}")
        key = (meeting, row["turn"], row["start"])
        if key in seen:
            errors.append("labelled twice")
        seen.add(key)
        for error in errors:
            print(f"{where}: {error}", file=sys.stderr)
        problems += len(errors)
        for kind in kinds:
            by_label[kind] += 1
            by_domain.setdefault(row["domain"], Counter())[kind] += 1
            by_meeting.setdefault(f"{meeting} ({row['sample']})", Counter())[kind] += 1
        by_sample[row.get("sample", "?")] += 1
    # Meetings labelled in full must have every sentence labelled.
    full = {m.split(" ")[0] for m in by_meeting if m.endswith("(full)")}
    for meeting in sorted(full):
        missing = [k for k in cache[meeting] if (meeting, k[0], k[1]) not in seen]
        if missing:
            print(f"{meeting}: labelled in full but {len(missing)} sentences have no label", file=sys.stderr)
            problems += 1
    header = "".join(f"{k:>12}" for k in KINDS)
    print(f"{len(seen)} sentences ({', '.join(f'{n} {s}' for s, n in sorted(by_sample.items()))}), {problems} problems")
    print(f"{'':28}{header}")
    print(f"{'all':28}" + "".join(f"{by_label[k]:>12}" for k in KINDS))
    for name, counts in sorted(by_domain.items()):
        print(f"{name:28}" + "".join(f"{counts[k]:>12}" for k in KINDS))
    for name, counts in sorted(by_meeting.items()):
        print(f"{name:28}" + "".join(f"{counts[k]:>12}" for k in KINDS))
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("meeting", nargs="?", help="meeting id, e.g. ES2006a")
    parser.add_argument("--turns", help="A:B, only turns A..B-1")
    parser.add_argument("--candidates", action="store_true", help="only sentences with a cue (CANDIDATE_CUE)")
    parser.add_argument("--check", action="store_true", help="resolve every labelled reference and count labels")
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL, help="the shared evaluation set")
    parser.add_argument("--labels", type=Path, default=DEFAULT_LABELS, help="the labels file (JSONL)")
    args = parser.parse_args()
    if args.check:
        raise SystemExit(1 if check(args.eval_dir, args.labels) else 0)
    if not args.meeting:
        parser.error("a meeting id or --check")
    turns = None
    if args.turns:
        a, _, b = args.turns.partition(":")
        turns = range(int(a or 0), int(b) if b else 10**9)
    print_sentences(args.eval_dir, args.meeting, turns, args.candidates)


if __name__ == "__main__":
    main()
