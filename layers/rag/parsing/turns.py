"""Render (speaker, text, times) turns as ``Speaker: text`` lines with exact offsets."""

from __future__ import annotations

from collections.abc import Iterable

from rag.parsing.model import Turn

UNKNOWN = "Unknown"
RawTurn = tuple[str, str, float | None, float | None]


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
