"""The sentences of bench/projects' meetings with the kinds their labels give them, for the sentence classifier.

bench/projects labels items, not sentences: a label names a meeting, a place (transcripts: a turn range;
Markdown notes: a line) and a quote. A sentence of that place overlapping the quote states the label's kind;
the place's other sentences, and the sentences of a label's later mentions (``updates``: restatements,
"done"), are neither positive nor negative for that kind (``unsure``); every other sentence is ``none``.

Sentences are cut as the extract stage reads them: per turn for transcripts, and for Markdown notes the text
outside the item sections (``## Decisions`` ...; those lines become items directly, rag.backfill.sections).

    .venv/bin/python bench/labels/project_sentences.py bench/projects/*/     # counts per project and kind
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "layers"))

from rag.backfill.notes_layout import item_sections  # noqa: E402
from rag.backfill.text import sentences  # noqa: E402
from rag.backfill.units import HEADING_LINE  # noqa: E402
from rag.parsing import parse_document  # noqa: E402

MEETING_SUFFIXES = {".txt", ".vtt", ".srt", ".json", ".md"}


@dataclass(frozen=True)
class ProjectSentence:
    project: str
    meeting: str  # the file's name
    text: str
    speaker: str | None
    first_in_turn: bool
    last_in_turn: bool
    previous: str | None  # the sentence before it in the meeting, and its speaker
    previous_speaker: str | None
    following: str | None
    following_speaker: str | None
    kinds: frozenset[str]
    unsure: frozenset[str]


@dataclass(frozen=True)
class _Piece:
    text: str
    start: int  # offsets into the parsed text
    end: int
    speaker: str | None
    turn: int | None  # transcripts: the turn's index; Markdown: None
    line: int  # Markdown: the 1-based line; transcripts: -1
    first: bool
    last: bool


def _fold(text: str) -> str:
    return " ".join(text.split()).casefold()


def _pieces(path: Path) -> Iterator[_Piece]:
    document = parse_document(path.read_bytes(), path.name)
    if document.turns:
        for turn in document.turns:
            cut = list(sentences(turn.text))
            for number, sentence in enumerate(cut):
                yield _Piece(sentence.text, sentence.start, sentence.end, turn.speaker or None, turn.index, -1,
                             number == 0, number == len(cut) - 1)  # fmt: skip
        return
    body = document.text
    covered = [(s.start, s.end) for s in item_sections(body)]
    blanked = HEADING_LINE.sub(lambda m: " " * len(m.group()), body)
    for sentence in sentences(blanked):
        if any(start < sentence.end and sentence.start < end for start, end in covered):
            continue
        line = body.count("\n", 0, sentence.start) + 1
        yield _Piece(sentence.text, sentence.start, sentence.end, None, None, line, True, True)


def _in_place(piece: _Piece, place: dict[str, object]) -> bool:
    if "turns" in place:
        first, last = place["turns"]  # type: ignore[misc]
        return piece.turn is not None and int(first) <= piece.turn <= int(last)
    line = int(place["line"])  # type: ignore[call-overload]
    return piece.turn is None and piece.line <= line <= piece.line + piece.text.count("\n")


def _states(piece: _Piece, quote: str) -> bool:
    """The sentence holds part of the quote: a run of five words (or all of a shorter quote) in common."""
    words, said = _fold(quote).split(), _fold(piece.text)
    size = min(5, len(words))
    return any(" ".join(words[i : i + size]) in said for i in range(len(words) - size + 1))


def project_sentences(folder: Path) -> list[ProjectSentence]:
    labels = [json.loads(line) for line in (folder / "labels.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    found: list[ProjectSentence] = []
    for path in sorted(p for p in folder.iterdir() if p.suffix in MEETING_SUFFIXES):
        pieces = list(_pieces(path))
        for index, piece in enumerate(pieces):
            kinds: set[str] = set()
            unsure: set[str] = set()
            for label in labels:
                kind = str(label["kind"])
                if label["meeting"] == path.name and _in_place(piece, label):
                    (kinds if _states(piece, str(label["quote"])) else unsure).add(kind)
                for update in label.get("updates", []):
                    if update.get("meeting") == path.name and _in_place(piece, update):
                        unsure.add(kind)
            before = pieces[index - 1] if index else None
            after = pieces[index + 1] if index + 1 < len(pieces) else None
            found.append(
                ProjectSentence(
                    folder.name, path.name, piece.text, piece.speaker, piece.first, piece.last,
                    before.text if before else None, before.speaker if before else None,
                    after.text if after else None, after.speaker if after else None,
                    frozenset(kinds), frozenset(unsure - kinds),
                )
            )  # fmt: skip
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("projects", type=Path, nargs="+", help="labelled project folders (bench/projects/*/)")
    args = parser.parse_args(argv)
    for folder in args.projects:
        rows = project_sentences(folder)
        counts = Counter(kind for row in rows for kind in row.kinds)
        unsure = Counter(kind for row in rows for kind in row.unsure)
        print(f"{folder.name}: {len(rows)} sentences; positives {dict(counts)}; unsure {dict(unsure)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
