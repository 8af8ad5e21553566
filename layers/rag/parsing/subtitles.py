"""WebVTT and SRT captions: each cue becomes one turn (speaker from a ``<v>`` tag or ``Speaker:``)."""

from __future__ import annotations

import re

from rag.errors import ParseError
from rag.parsing.model import ParsedDocument
from rag.parsing.transcript_txt import speaker_line
from rag.parsing.turns import RawTurn, render_turns

TIMING = re.compile(
    r"^\s*(?P<start>(?:\d+:)?\d{1,2}:\d{2}[.,]\d{1,3})\s*-->\s*(?P<end>(?:\d+:)?\d{1,2}:\d{2}[.,]\d{1,3})"
)
VOICE = re.compile(r"<v(?:\.[^\s>]+)*\s+([^>]+)>")
TAG = re.compile(r"</?[^>]+>")


def seconds(stamp: str) -> float:
    parts = stamp.replace(",", ".").split(":")
    value = 0.0
    for part in parts:
        value = value * 60 + float(part)
    return round(value, 3)


def parse_captions(text: str, name: str, fmt: str) -> ParsedDocument:
    raw: list[RawTurn] = []
    for block in re.split(r"\n\s*\n", text.strip()):
        lines = block.split("\n")
        timing_at = next((i for i, line in enumerate(lines) if TIMING.match(line)), None)
        if timing_at is None:
            continue  # header, NOTE, STYLE, REGION blocks
        timing = TIMING.match(lines[timing_at])
        assert timing is not None
        payload = " ".join(lines[timing_at + 1 :]).strip()
        voice = VOICE.search(payload)
        speaker = voice[1].strip() if voice else ""
        payload = " ".join(TAG.sub("", payload).split())
        if not speaker and (match := speaker_line(payload)):
            speaker, payload = match["speaker"].strip(), match["text"]
        raw.append((speaker, payload, seconds(timing["start"]), seconds(timing["end"])))
    rendered, turns = render_turns(raw)
    if not turns:
        raise ParseError(f"{name}: no caption cues with text found")
    return ParsedDocument(
        kind="transcript",
        format=fmt,
        text=rendered,
        turns=turns,
        participants=[s for s in dict.fromkeys(t.speaker for t in turns) if s != "Unknown"],
    )
