"""The passages an answer may cite: numbered as the tools hand them out, checked in the answer.

Every passage a tool returns gets a number ``[n]`` (the same span twice keeps its number).
An answer's ``[n]`` that no tool returned is removed from the text, and only the passages
the answer actually cites are returned as its citations: an answer never cites what it was
not given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any

_MARKER = re.compile(r"\s?\[(\d{1,4})\]")


@dataclass(frozen=True)
class Passage:
    """One citable span of a document (or an extracted item of it)."""

    type: str
    document_id: str
    source_uri: str
    title: str | None
    start_char: int
    end_char: int
    start_turn: int | None = None
    end_turn: int | None = None
    speakers: tuple[str, ...] = ()
    meeting_date: date | None = None

    def key(self) -> tuple[Any, ...]:
        return (self.type, self.document_id, self.start_char, self.end_char)


@dataclass
class Citations:
    """The passages handed out so far, numbered from 1 in order of first appearance."""

    passages: list[Passage] = field(default_factory=list)
    _numbers: dict[tuple[Any, ...], int] = field(default_factory=dict)

    def add(self, passage: Passage) -> int:
        key = passage.key()
        if key not in self._numbers:
            self.passages.append(passage)
            self._numbers[key] = len(self.passages)
        return self._numbers[key]

    def get(self, n: int) -> Passage | None:
        return self.passages[n - 1] if 1 <= n <= len(self.passages) else None

    def __len__(self) -> int:
        return len(self.passages)


def cited_numbers(answer: str) -> list[int]:
    """The ``[n]`` markers of ``answer``, in order of first appearance."""
    return list(dict.fromkeys(int(m.group(1)) for m in _MARKER.finditer(answer)))


def keep_known_citations(answer: str, citations: Citations) -> tuple[str, list[int]]:
    """``answer`` without markers that cite nothing handed out, and the numbers it still cites."""

    def check(match: re.Match[str]) -> str:
        return match.group(0) if citations.get(int(match.group(1))) is not None else ""

    cleaned = _MARKER.sub(check, answer)
    return cleaned, cited_numbers(cleaned)


def citation_records(citations: Citations, numbers: list[int]) -> list[dict[str, Any]]:
    """The response's ``citations``: one record per cited number, in numeric order."""
    records = []
    for n in sorted(numbers):
        passage = citations.get(n)
        if passage is None:
            continue
        records.append(
            {
                "n": n, "type": passage.type, "document_id": passage.document_id,
                "source": {"uri": passage.source_uri, "title": passage.title},
                "start_turn": passage.start_turn, "end_turn": passage.end_turn,
                "start_char": passage.start_char, "end_char": passage.end_char,
                "speakers": list(passage.speakers), "meeting_date": passage.meeting_date,
            }
        )  # fmt: skip
    return records
