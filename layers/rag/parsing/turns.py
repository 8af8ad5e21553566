"""Render (speaker, text, times) turns as ``Speaker: text`` lines with exact offsets, and the
helpers the transcript parsers share: merging a speaker's consecutive pieces, words -> turns."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from rag.errors import ParseError
from rag.parsing.model import ParsedDocument, Turn

UNKNOWN = "Unknown"
RawTurn = tuple[str, str, float | None, float | None]
# Services and captioners cut one utterance into many pieces; merged pieces stay under this.
MERGE_MAX_CHARS = 1000
SENTENCE_END = (".", "?", "!", "…")


class Word(NamedTuple):
    """One recognised token of a speech service's output."""

    speaker: str | None
    text: str
    start: float | None
    end: float | None
    joins_previous: bool = False  # punctuation: written right after the word before it


def render_turns(raw: Iterable[RawTurn], *, keep_empty: bool = False) -> tuple[str, list[Turn]]:
    """``keep_empty`` keeps turns with no text (as ``Speaker:``) so that turn i stays item i."""
    lines: list[str] = []
    turns: list[Turn] = []
    offset = 0
    for speaker, text, start, end in raw:
        speaker = " ".join(speaker.split()) or UNKNOWN
        text = " ".join(text.split())
        if not text and not keep_empty:
            continue
        line = f"{speaker}: {text}" if text else f"{speaker}:"
        turns.append(Turn(len(turns), speaker, text, offset, offset + len(line), start, end))
        lines.append(line)
        offset += len(line) + 1
    return "\n".join(lines), turns


def seconds(stamp: str) -> float:
    """``01:02:03,004`` / ``02:03.5`` / ``00:01`` -> seconds."""
    value = 0.0
    for part in stamp.replace(",", ".").split(":"):
        value = value * 60 + float(part)
    return round(value, 3)


def speaker_label(value: str | int | None) -> str | None:
    """A service's speaker as people read it: ``0`` or ``"A"`` -> ``Speaker 0`` / ``Speaker A``
    (as the services' own renderings write them); a name or ``spk_0`` as written."""
    if value is None:
        return None
    label = " ".join(str(value).split())
    if not label:
        return None
    return f"Speaker {label}" if isinstance(value, int) or (len(label) <= 2 and label.isalnum()) else label


def speakers_of(turns: Iterable[Turn]) -> list[str]:
    """The named speakers, in order of first turn."""
    return [speaker for speaker in dict.fromkeys(t.speaker for t in turns) if speaker != UNKNOWN]


def merge_consecutive(raw: Iterable[RawTurn]) -> list[RawTurn]:
    """Consecutive pieces of one named speaker become one turn while it stays under
    ``MERGE_MAX_CHARS``; "Unknown" pieces are never merged (nothing says they are one voice)."""
    merged: list[RawTurn] = []
    for speaker, text, start, end in raw:
        speaker = " ".join(speaker.split()) or UNKNOWN
        text = " ".join(text.split())
        if not text:
            continue
        last = merged[-1] if merged else None
        if last is not None and speaker != UNKNOWN and last[0] == speaker and len(last[1]) + len(text) < MERGE_MAX_CHARS:
            merged[-1] = (speaker, f"{last[1]} {text}", last[2], end if end is not None else last[3])
        else:
            merged.append((speaker, text, start, end))
    return merged


def word_turns(words: Iterable[Word]) -> list[RawTurn]:
    """A speaker's consecutive words form a turn, cut at the first sentence end past
    ``MERGE_MAX_CHARS`` (as merged caption cues are); words without a speaker are cut at
    every sentence end."""
    turns: list[RawTurn] = []
    current: list[str] = []
    chars = 0
    speaker: str | None = None
    start: float | None = None
    end: float | None = None
    for word in words:
        text = word.text.strip()
        if not text:
            continue
        if word.joins_previous and current:
            current[-1] += text
            chars += len(text)
            continue
        sentence_ended = bool(current) and current[-1].endswith(SENTENCE_END)
        if current and (word.speaker != speaker or (sentence_ended and (speaker is None or chars >= MERGE_MAX_CHARS))):
            turns.append((speaker or UNKNOWN, " ".join(current), start, end))
            current, chars = [], 0
        if not current:
            speaker, start, end = word.speaker, word.start, None
        current.append(text)
        chars += len(text) + 1
        end = word.end if word.end is not None else end
    if current:
        turns.append((speaker or UNKNOWN, " ".join(current), start, end))
    return turns


def transcript_of(raw: Iterable[RawTurn], name: str, fmt: str, *, empty: str = "no speech found") -> ParsedDocument:
    """A transcript rendered from ``raw`` turns; ParseError (``name: empty``) when no turn has text."""
    text, turns = render_turns(raw)
    if not turns:
        raise ParseError(f"{name}: {empty}")
    return ParsedDocument(kind="transcript", format=fmt, text=text, turns=turns, participants=speakers_of(turns))
