"""The passages an answer may cite: numbered as the tools hand them out, checked in the answer.

Every passage a tool returns gets a number ``[n]`` (the same span twice keeps its number).
An answer's ``[n]`` that no tool returned is removed from the text, and only the passages
the answer actually cites are returned as its citations: an answer never cites what it was
not given.

A number is local to one request (an MCP ``tools/call`` starts again from ``[1]``), so every
passage also has a ``citation_id``: a short hash of what it is (its type, document and
character range), the same in every call and process, so a chat that searches twice can tell
the same passage from a different one.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rag.ask.types import Cited

CITATION_ID_CHARS = 8  # 32 bits: two passages of one conversation colliding is about one in 10^5 at 300 passages
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

    def citation_id(self) -> str:
        """The passage's id across calls: derived from ``key()`` alone (no counter, no salt)."""
        text = f"{self.type}:{self.document_id}:{self.start_char}-{self.end_char}"
        return hashlib.sha256(text.encode()).hexdigest()[:CITATION_ID_CHARS]


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

    def cite(self, passage: Passage) -> dict[str, str]:
        """What a tool result shows to cite ``passage``: its number in this request and its id across calls."""
        return {"cite_as": f"[{self.add(passage)}]", "citation_id": passage.citation_id()}

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


def cited(citations: Citations, numbers: list[int]) -> tuple[Cited, ...]:
    """The answer's citations: one per cited number, in numeric order."""
    from rag.ask.types import Cited

    return tuple(Cited(n, passage) for n in sorted(numbers) if (passage := citations.get(n)) is not None)
