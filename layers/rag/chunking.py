"""ParsedDocument -> chunks sized in the embedding model's own tokens.

- Transcripts: runs of whole turns (``text[turns[a].start_char:turns[b].end_char]``)
  packed greedily up to ``max_tokens``; the next chunk starts with the trailing whole
  turns of the previous one whose tokens add up to at most ``overlap_tokens``. Only a
  single turn longer than a chunk (in tokens or characters) is split (at sentence, then
  word boundaries, then characters), and its pieces have ``start_turn == end_turn``.
- Documents: within one section (a chunk never straddles a heading) paragraphs are
  packed the same way, an oversized paragraph as its sentences (then words); chunks
  carry the section's heading path and are trimmed of surrounding whitespace.
- Every chunk satisfies ``doc.text[start_char:end_char] == text`` and
  ``token_count == count_tokens(text) <= max_tokens``, counted on the final text, and
  holds at most ``max_tokens * CHARS_PER_TOKEN_BOUND`` characters: a tokenizer may read
  a hostile word (1 MB without spaces) as one unknown token, and that word is still cut.

Tokens are counted once per turn or paragraph and added up to pack; each packed chunk
is then counted once more (separators can add tokens) and shrunk if it is over.
The overlap is capped at half a chunk: beyond that, chunks would be mostly repeats.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from rag.parsing.model import Chunk, ParsedDocument, Section

CountTokens = Callable[[str], int]

PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")
# Where an oversized unit is cut first: after a sentence end, or at a line break.
SENTENCE_BREAK = re.compile(r"(?<=[.!?;。！？])\s+|[ \t]*\n\s*")
WORD_BREAK = re.compile(r"\s+")
LINE_BREAK = re.compile(r"\n")
CHARS_PER_TOKEN_BOUND = 32  # no real token of text is longer: a longer span per token is an unknown-token word


@dataclass(frozen=True)
class Unit:
    """A span packed whole (a turn, a paragraph, a piece of an oversized one)."""

    start: int
    end: int
    tokens: int


@dataclass(frozen=True)
class Span:
    """A packed chunk: its characters, its verified token count and the units it covers."""

    start: int
    end: int
    tokens: int
    first: int  # index of its first unit
    last: int  # index of its last unit (inclusive)


def chunk_document(doc: ParsedDocument, count_tokens: CountTokens, max_tokens: int, overlap_tokens: int) -> list[Chunk]:
    if max_tokens < 1:
        raise ValueError(f"expected max_tokens >= 1, got {max_tokens}")
    if overlap_tokens < 0:
        raise ValueError(f"expected overlap_tokens >= 0, got {overlap_tokens}")
    overlap_tokens = min(overlap_tokens, max_tokens // 2)
    if doc.kind == "transcript" and doc.turns:
        return _chunk_transcript(doc, count_tokens, max_tokens, overlap_tokens)
    return _chunk_sections(doc, count_tokens, max_tokens, overlap_tokens)


def _chunk_transcript(doc: ParsedDocument, count_tokens: CountTokens, max_tokens: int, overlap_tokens: int) -> list[Chunk]:
    text, turns = doc.text, doc.turns
    units = [Unit(t.start_char, t.end_char, count_tokens(text[t.start_char : t.end_char])) for t in turns]
    chunks: list[Chunk] = []
    for span in pack(text, units, count_tokens, max_tokens, overlap_tokens):
        covered = turns[span.first : span.last + 1]
        chunks.append(
            Chunk(
                index=len(chunks),
                text=text[span.start : span.end],
                start_char=span.start,
                end_char=span.end,
                token_count=span.tokens,
                start_turn=covered[0].index,
                end_turn=covered[-1].index,
                speakers=tuple(dict.fromkeys(t.speaker for t in covered)),
                start_time=covered[0].start_time,
                end_time=covered[-1].end_time,
            )
        )
    return chunks


def _chunk_sections(doc: ParsedDocument, count_tokens: CountTokens, max_tokens: int, overlap_tokens: int) -> list[Chunk]:
    text = doc.text
    sections = doc.sections or [Section((), 0, len(text))]
    chunks: list[Chunk] = []
    for section in sections:
        units: list[Unit] = []
        for paragraph in _paragraphs(text, section.start_char, section.end_char, count_tokens):
            # An oversized paragraph's sentences pack like paragraphs: a heading just before it,
            # or the end of it, shares a chunk with its neighbours instead of standing alone.
            if _too_big(paragraph, max_tokens):
                units.extend(split_oversized(text, paragraph, count_tokens, max_tokens))
            else:
                units.append(paragraph)
        for span in pack(text, units, count_tokens, max_tokens, overlap_tokens):
            chunks.append(
                Chunk(
                    index=len(chunks),
                    text=text[span.start : span.end],
                    start_char=span.start,
                    end_char=span.end,
                    token_count=span.tokens,
                    heading_path=section.heading_path,
                )
            )
    return chunks


def pack(text: str, units: list[Unit], count_tokens: CountTokens, max_tokens: int, overlap_tokens: int) -> Iterator[Span]:
    """Greedy runs of whole units, each verified to fit; oversized units come out in pieces."""
    max_chars = max_tokens * CHARS_PER_TOKEN_BOUND
    i = 0
    while i < len(units):
        if _too_big(units[i], max_tokens):
            for piece in pack(text, split_oversized(text, units[i], count_tokens, max_tokens), count_tokens, max_tokens, 0):
                yield Span(piece.start, piece.end, piece.tokens, i, i)
            i += 1
            continue
        j, total = i, units[i].tokens
        while j + 1 < len(units) and total + units[j + 1].tokens <= max_tokens:
            if units[j + 1].end - units[i].start > max_chars:
                break  # few tokens but many characters: words the tokenizer reads as unknown
            j += 1
            total += units[j].tokens
        tokens = units[i].tokens if j == i else count_tokens(text[units[i].start : units[j].end])
        while tokens > max_tokens:  # the sum was an estimate: what joins the units costs tokens too
            j -= 1
            tokens = units[i].tokens if j == i else count_tokens(text[units[i].start : units[j].end])
        yield Span(units[i].start, units[j].end, tokens, i, j)
        if j + 1 == len(units):
            return
        i = _next_start(units, i, j, max_tokens, overlap_tokens)


def _next_start(units: list[Unit], i: int, j: int, max_tokens: int, overlap_tokens: int) -> int:
    """First unit of the chunk after ``units[i..j]``: trailing units carried over as overlap.

    Nothing is carried into the pieces of an oversized unit, and never so much that the
    next unit would not fit beside it (the next chunk would then repeat this one). The
    result is always > i, so packing progresses.
    """
    following = units[j + 1].tokens
    start, carried = j + 1, 0
    if _too_big(units[j + 1], max_tokens):
        return start
    while start - 1 > i:
        tokens = units[start - 1].tokens
        if carried + tokens > overlap_tokens or carried + tokens + following > max_tokens:
            break
        if units[j + 1].end - units[start - 1].start > max_tokens * CHARS_PER_TOKEN_BOUND:
            break
        start -= 1
        carried += tokens
    return start


def _too_big(unit: Unit, max_tokens: int) -> bool:
    """Over the token budget, or longer than any text of that many real tokens."""
    return unit.tokens > max_tokens or unit.end - unit.start > max_tokens * CHARS_PER_TOKEN_BOUND


def _fitting(text: str, start: int, end: int, count_tokens: CountTokens, max_tokens: int) -> Unit | None:
    """``text[start:end]`` as a unit if it fits the budget; a span over the character bound is never counted."""
    if end - start > max_tokens * CHARS_PER_TOKEN_BOUND:
        return None  # counting a megabyte only to learn that it must be cut anyway is wasted work
    tokens = count_tokens(text[start:end])
    return Unit(start, end, tokens) if tokens <= max_tokens else None


def split_oversized(text: str, unit: Unit, count_tokens: CountTokens, max_tokens: int) -> list[Unit]:
    """Pieces of one unit, each within the budget: sentences, else words, else characters."""
    pieces: list[Unit] = []
    for start, end in _between(text, unit.start, unit.end, SENTENCE_BREAK):
        sentence = _fitting(text, start, end, count_tokens, max_tokens)
        if sentence is not None:
            pieces.append(sentence)
            continue
        for w_start, w_end in _between(text, start, end, WORD_BREAK):
            word = _fitting(text, w_start, w_end, count_tokens, max_tokens)
            if word is not None:
                pieces.append(word)
            else:
                pieces.extend(_characters(text, w_start, w_end, count_tokens, max_tokens))
    return pieces


def _characters(text: str, start: int, end: int, count_tokens: CountTokens, max_tokens: int) -> Iterator[Unit]:
    """A "word" over the budget (a URL, a hash, a language without spaces): longest fitting prefixes."""
    guess = max_tokens  # characters; then the previous piece's length, as the next piece is likely alike
    while start < end:
        limit = min(end, start + max_tokens * CHARS_PER_TOKEN_BOUND)
        piece = _longest_prefix(text, start, limit, guess, count_tokens, max_tokens)
        yield piece
        guess, start = piece.end - piece.start, piece.end


def _longest_prefix(text: str, start: int, limit: int, guess: int, count_tokens: CountTokens, max_tokens: int) -> Unit:
    """The longest ``text[start:end]`` (``end <= limit``) within ``max_tokens``.

    Gallops up from ``start + guess`` then bisects, so a megabyte without spaces costs a
    few counts of strings about a piece long per piece, never counts of the whole word.
    """
    fits: Unit | None = None  # the longest prefix known to fit
    too_long = limit + 1  # the shortest end known not to fit
    probe = min(limit, start + max(1, guess))
    while True:
        tokens = count_tokens(text[start:probe])
        if tokens > max_tokens:
            too_long = probe
            break
        fits = Unit(start, probe, tokens)
        if probe == limit:
            return fits
        probe = min(limit, start + 2 * (probe - start))
    low = fits.end if fits is not None else start
    while too_long - low > 1:
        mid = (low + too_long) // 2
        tokens = count_tokens(text[start:mid])
        if tokens <= max_tokens:
            fits, low = Unit(start, mid, tokens), mid
        else:
            too_long = mid
    if fits is None:
        raise ValueError(f"max_tokens={max_tokens} is less than the tokens of the single character {text[start]!r}")
    return fits


def _between(text: str, start: int, end: int, separator: re.Pattern[str]) -> list[tuple[int, int]]:
    """The non-empty spans of ``text[start:end]`` between matches of ``separator``."""
    spans: list[tuple[int, int]] = []
    cursor = start
    for match in separator.finditer(text, start, end):
        if match.start() > cursor:
            spans.append((cursor, match.start()))
        cursor = max(cursor, match.end())
    if cursor < end:
        spans.append((cursor, end))
    return spans


def _paragraphs(text: str, start: int, end: int, count_tokens: CountTokens) -> list[Unit]:
    """Blank-line separated paragraphs of a section, trimmed, whitespace-only ones dropped."""
    units: list[Unit] = []
    for p_start, p_end in _between(text, start, end, PARAGRAPH_BREAK):
        p_start, p_end = _trim(text, p_start, p_end)
        if p_start < p_end:
            units.append(Unit(p_start, p_end, count_tokens(text[p_start:p_end])))
    return units


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def pack_lines(text: str, start: int, end: int, count_tokens: CountTokens, max_tokens: int) -> list[Span]:
    """``text[start:end]`` as runs of whole lines within ``max_tokens`` each, without overlap.

    A transcript's turns and a document's paragraphs are lines; a line over the budget
    comes out in pieces. Blank lines are left out.
    """
    units = []
    for l_start, l_end in _between(text, start, end, LINE_BREAK):
        l_start, l_end = _trim(text, l_start, l_end)
        if l_start < l_end:
            units.append(Unit(l_start, l_end, count_tokens(text[l_start:l_end])))
    return list(pack(text, units, count_tokens, max_tokens, 0))
