"""The sentences of a segment with where they came from: what both extractors read."""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag.backfill.documents import ClaimedDocument
from rag.backfill.models import StoredSegment
from rag.backfill.text import sentences

HEADING_LINE = re.compile(r"^ {0,3}#{1,6}(?:[ \t].*)?$", re.MULTILINE)


@dataclass(frozen=True)
class Unit:
    """One sentence: ``body[start_char:end_char] == text``; ``turn`` and ``speaker`` for transcripts."""

    start_char: int
    end_char: int
    text: str
    turn: int | None
    speaker: str | None


def segment_units(document: ClaimedDocument, segment: StoredSegment) -> list[Unit]:
    if document.turns and segment.start_turn is not None and segment.end_turn is not None:
        units = []
        for turn in document.turns[segment.start_turn : segment.end_turn + 1]:
            utterance = document.body[turn.text_start : turn.end_char]
            for sentence in sentences(utterance, turn.text_start):
                units.append(Unit(sentence.start, sentence.end, sentence.text, turn.index, turn.speaker or None))
        return units
    text = document.body[segment.start_char : segment.end_char]
    # Headings are titles, not sentences: blank them out (same length, so offsets hold).
    text = HEADING_LINE.sub(lambda m: " " * len(m.group()), text)
    return [Unit(s.start, s.end, s.text, None, None) for s in sentences(text, segment.start_char)]
