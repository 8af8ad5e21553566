"""ParsedDocument -> chunks sized in the embedding model's own tokens.

- Transcripts: runs of whole turns, packed up to ``max_tokens``; consecutive chunks
  share their trailing turns up to ``overlap_tokens``. Only a turn longer than a chunk
  is split (at sentence, then word boundaries).
- Documents: paragraphs packed within one section (a chunk never straddles a heading)
  and carrying the section's heading path.
- Every chunk satisfies ``doc.text[start_char:end_char] == text`` and
  ``count_tokens(text) <= max_tokens`` (checked on the final text, never estimated).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from rag.parsing.model import Chunk, ParsedDocument

CountTokens = Callable[[str], int]

PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")
WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Unit:
    """A span that is never split across chunks unless it alone exceeds the budget."""

    start: int
    end: int
    tokens: int
    turn: int | None = None


def chunk_document(doc: ParsedDocument, count_tokens: CountTokens, max_tokens: int, overlap_tokens: int) -> list[Chunk]:
    if max_tokens < 1:
        raise ValueError(f"expected max_tokens >= 1, got {max_tokens}")
    overlap_tokens = max(0, min(overlap_tokens, max_tokens // 2))
    spans: list[tuple[int, int, tuple[str, ...]]] = []
    if doc.kind == "transcript" and doc.turns:
        units = [_unit(doc.text, t.start_char, t.end_char, count_tokens, t.index) for t in doc.turns]
        groups = [([u for u in units if u is not None], ())]
    else:
        groups = [(_paragraphs(doc.text, s.start_char, s.end_char, count_tokens), s.heading_path) for s in doc.sections]
    for units, heading_path in groups:
        for start, end in _pack(doc.text, units, count_tokens, max_tokens, overlap_tokens):
            spans.append((start, end, heading_path))
    return [_chunk(doc, i, start, end, heading_path, count_tokens) for i, (start, end, heading_path) in enumerate(spans)]


def _unit(text: str, start: int, end: int, count_tokens: CountTokens, turn: int | None = None) -> Unit | None:
    start, end = _trim(text, start, end)
    if start >= end:
        return None
    return Unit(start, end, count_tokens(text[start:end]), turn)


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _paragraphs(text: str, start: int, end: int, count_tokens: CountTokens) -> list[Unit]:
    units = []
    cursor = start
    for match in PARAGRAPH_BREAK.finditer(text, start, end):
        if unit := _unit(text, cursor, match.start(), count_tokens):
            units.append(unit)
        cursor = match.end()
    if unit := _unit(text, cursor, end, count_tokens):
        units.append(unit)
    return units


def _pack(
    text: str, units: list[Unit], count_tokens: CountTokens, max_tokens: int, overlap_tokens: int
) -> Iterator[tuple[int, int]]:
    """Greedy packing of whole units; yields (start_char, end_char) of each chunk."""
    i = 0
    while i < len(units):
        if units[i].tokens > max_tokens:
            yield from _split_long(text, units[i], count_tokens, max_tokens)
            i += 1
            continue
        j, total = i, units[i].tokens
        while j + 1 < len(units) and units[j + 1].tokens <= max_tokens and total + units[j + 1].tokens <= max_tokens:
            j += 1
            total += units[j].tokens
        # Separators between units may add tokens the per-unit counts missed: verify, shrink.
        while j > i and count_tokens(text[units[i].start : units[j].end]) > max_tokens:
            j -= 1
        yield units[i].start, units[j].end
        if j + 1 >= len(units):
            return
        # Next chunk starts with the trailing units of this one that fit in the overlap.
        nxt, carried = j + 1, 0
        while nxt - 1 > i and carried + units[nxt - 1].tokens <= overlap_tokens:
            nxt -= 1
            carried += units[nxt].tokens
        i = nxt


def _split_long(text: str, unit: Unit, count_tokens: CountTokens, max_tokens: int) -> Iterator[tuple[int, int]]:
    """Pieces of one oversized unit, cut at sentence, then word boundaries."""
    pieces = _pieces(text, unit.start, unit.end, SENTENCE_END)
    fine: list[Unit] = []
    for start, end in pieces:
        tokens = count_tokens(text[start:end])
        if tokens <= max_tokens:
            fine.append(Unit(start, end, tokens))
        else:
            fine.extend(_words(text, start, end, count_tokens, max_tokens))
    yield from _pack(text, fine, count_tokens, max_tokens, 0)


def _pieces(text: str, start: int, end: int, boundary: re.Pattern[str]) -> list[tuple[int, int]]:
    pieces, cursor = [], start
    for match in boundary.finditer(text, start, end):
        if match.start() > cursor:
            pieces.append((cursor, match.start()))
        cursor = match.end()
    if cursor < end:
        pieces.append((cursor, end))
    return pieces


def _words(text: str, start: int, end: int, count_tokens: CountTokens, max_tokens: int) -> list[Unit]:
    units = []
    for w_start, w_end in _pieces(text, start, end, WHITESPACE):
        tokens = count_tokens(text[w_start:w_end])
        if tokens <= max_tokens:
            units.append(Unit(w_start, w_end, tokens))
            continue
        # A single "word" beyond the budget (a URL, a hash): cut it by characters.
        step = max(1, (w_end - w_start) * max_tokens // (tokens * 2))
        for s in range(w_start, w_end, step):
            units.append(Unit(s, min(s + step, w_end), count_tokens(text[s : min(s + step, w_end)])))
    return units


def _chunk(
    doc: ParsedDocument, index: int, start: int, end: int, heading_path: tuple[str, ...], count_tokens: CountTokens
) -> Chunk:
    content = doc.text[start:end]
    turns = [t for t in doc.turns if t.start_char < end and t.end_char > start]
    return Chunk(
        index=index,
        text=content,
        start_char=start,
        end_char=end,
        token_count=count_tokens(content),
        start_turn=turns[0].index if turns else None,
        end_turn=turns[-1].index if turns else None,
        speakers=tuple(dict.fromkeys(t.speaker for t in turns)),
        start_time=turns[0].start_time if turns else None,
        end_time=turns[-1].end_time if turns else None,
        heading_path=heading_path,
    )
