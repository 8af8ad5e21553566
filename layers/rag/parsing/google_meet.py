"""Google Meet's transcript as text (the Google Docs file it saves, downloaded as .txt).

A title line ``<meeting> (<YYYY-MM-DD HH:MM zone>) - Transcript``, ``Attendees`` and a line
of comma-separated names, ``Transcript``, then ``Speaker: text`` paragraphs under timestamp
lines (``00:05:00``, the start time of the turn after it). Meet's note that the transcript
was computer generated and its closing ``Meeting ended after 00:14:32`` are no turns.
"""

from __future__ import annotations

import re
from datetime import date

from rag.errors import ParseError
from rag.parsing.line_turns import scan_turns, speaker_line, speaker_opening
from rag.parsing.model import ParsedDocument
from rag.parsing.turns import speakers_of

TITLE = re.compile(
    r"^[ \t]*(?P<title>.*?)(?:[ \t]*\((?P<date>\d{4}[-/]\d{2}[-/]\d{2})\b[^)]*\))?[ \t]*[-–][ \t]*Transcript[ \t]*$"
)
HEADINGS = ("Attendees", "Transcript")
MEET_STAMP = re.compile(r"^[ \t]*\d{2}:\d{2}:\d{2}[ \t]*$")
NOTICE = re.compile(r"^[ \t]*(?:This editable transcript was computer generated|Meeting ended after \d)", re.IGNORECASE)
HEAD_LINES = 12


def matches(text: str) -> bool:
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    head = lines[:HEAD_LINES]
    titled = bool(head) and TITLE.match(head[0]) is not None
    return (
        (titled or all(heading in head for heading in HEADINGS))
        and any(MEET_STAMP.match(line) for line in lines)
        and any(speaker_line(line) for line in lines)
    )


def parse(text: str, name: str) -> ParsedDocument:
    found = scan_turns(text, speaker_opening, skip=lambda line: NOTICE.match(line) is not None)
    if not found.turns:
        raise ParseError(f"{name}: a Google Meet transcript without 'Speaker: text' lines")
    title_line = TITLE.match(found.preamble[0]) if found.preamble else None
    return ParsedDocument(
        kind="transcript",
        format="google-meet",
        text=text,
        turns=found.turns,
        title=(title_line["title"] or None) if title_line else None,
        meeting_date=_date(title_line["date"]) if title_line and title_line["date"] else None,
        participants=_attendees(found.preamble) or speakers_of(found.turns),
    )


def _attendees(preamble: list[str]) -> list[str]:
    """The names on the line after ``Attendees``."""
    if "Attendees" not in preamble[:-1]:
        return []
    names = preamble[preamble.index("Attendees") + 1]
    return [] if names in HEADINGS else [n for n in (" ".join(part.split()) for part in names.split(",")) if n]


def _date(value: str) -> date | None:
    try:
        return date.fromisoformat(value.replace("/", "-"))
    except ValueError:
        return None
