"""Render (speaker, text, times) turns as ``Speaker: text`` lines with exact offsets."""

from __future__ import annotations

from collections.abc import Iterable

from rag.parsing.model import Turn

RawTurn = tuple[str, str, float | None, float | None]


def render_turns(raw: Iterable[RawTurn]) -> tuple[str, list[Turn]]:
    lines: list[str] = []
    turns: list[Turn] = []
    offset = 0
    for speaker, text, start, end in raw:
        speaker = " ".join(speaker.split()) or "Unknown"
        text = " ".join(text.split())
        if not text:
            continue
        line = f"{speaker}: {text}"
        turns.append(Turn(len(turns), speaker, text, offset, offset + len(line), start, end))
        lines.append(line)
        offset += len(line) + 1
    return "\n".join(lines), turns
