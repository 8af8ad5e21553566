"""Otter.ai's text export: ``Name  0:00`` (two spaces, then the time from the start of the
recording) on one line, the words on the line(s) after it, a blank line between turns.
An export from a free plan ends with ``Transcribed by https://otter.ai``: no turn.
"""

from __future__ import annotations

import re

from rag.errors import ParseError
from rag.parsing.line_turns import CLOCK, MAX_NAME_CHARS, NAME, Opening, scan_turns
from rag.parsing.model import ParsedDocument
from rag.parsing.turns import seconds, speakers_of

HEADER = re.compile(rf"^(?P<name>{NAME})[ \t]{{2,}}(?P<time>{CLOCK})[ \t]*$")
FOOTER = re.compile(r"^[ \t]*Transcribed by https?://otter\.ai/?[ \t]*$", re.IGNORECASE)
# One header line could be a document's "Agenda  10:00"; two, first thing in the file, are an export.
MIN_TURNS = 2


def opening(line: str) -> Opening | None:
    match = HEADER.match(line)
    if match is None or len(match["name"]) > MAX_NAME_CHARS:
        return None
    return " ".join(match["name"].split()), "", seconds(match["time"])


def matches(text: str) -> bool:
    lines = [line for line in text.split("\n") if line.strip()]
    return bool(lines) and opening(lines[0]) is not None and sum(1 for line in lines if opening(line)) >= MIN_TURNS


def parse(text: str, name: str) -> ParsedDocument:
    turns = scan_turns(text, opening, skip=lambda line: FOOTER.match(line) is not None).turns
    if not turns:
        raise ParseError(f"{name}: no Otter.ai 'Name  0:00' turns found")
    return ParsedDocument(kind="transcript", format="otter", text=text, turns=turns, participants=speakers_of(turns))
