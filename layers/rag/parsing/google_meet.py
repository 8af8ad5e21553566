"""Google Meet's transcript as text (the Google Docs file Meet saves, downloaded as .txt).

A title line ``<meeting> (<YYYY-MM-DD HH:MM zone>) - Transcript``, ``Attendees`` and a line
of comma-separated names, ``Transcript``, then ``Speaker: text`` paragraphs under timestamp
lines (``00:05:00``, the start time of the turn after it). When Gemini takes notes, the
notes come first and the transcript follows a ``📖 Transcript`` line: turns are read only
after that line (a summary's ``Topic: ...`` lines are no turns), the notes stay in the text.
Meet's note that the transcript was computer generated and its closing ``Meeting ended
after 00:14:32`` are no turns.
"""

from __future__ import annotations

import re
from datetime import date, datetime

from rag.errors import ParseError
from rag.parsing.line_turns import scan_turns, speaker_line, speaker_opening
from rag.parsing.model import ParsedDocument
from rag.parsing.turns import speakers_of

TITLE = re.compile(
    r"^[ \t]*(?P<title>.*?)(?:[ \t]*\((?P<date>\d{4}[-/]\d{2}[-/]\d{2})\b[^)]*\))?[ \t]*[-–][ \t]*Transcript[ \t]*$"
)
TRANSCRIPT_HEADING = re.compile(r"^[ \t]*(?:📖[ \t]*)?Transcript[ \t]*$", re.MULTILINE)
MEET_STAMP = re.compile(r"^[ \t]*\d{2}:\d{2}:\d{2}[ \t]*$", re.MULTILINE)
NOTICE = re.compile(
    r"^[ \t]*(?:This editable transcript was computer generated|(?:Meeting|Transcription) ended after \d)", re.IGNORECASE
)
DATE_LINE_FORMATS = ("%b %d, %Y", "%B %d, %Y", "%Y-%m-%d")  # Gemini's "Nov 2, 2026"
HEAD_LINES = 12


def matches(text: str) -> bool:
    # The whole-text searches first: most files have no Meet timestamp line and stop there.
    if MEET_STAMP.search(text) is None:
        return False
    head = [line for line in text.split("\n", HEAD_LINES * 4)[: HEAD_LINES * 4] if line.strip()][:HEAD_LINES]
    headed = any(TITLE.match(line) for line in head) or TRANSCRIPT_HEADING.search(text) is not None
    return headed and any(speaker_line(line) for line in text.split("\n"))


def parse(text: str, name: str) -> ParsedDocument:
    heading = TRANSCRIPT_HEADING.search(text)
    found = scan_turns(
        text, speaker_opening, skip=lambda line: NOTICE.match(line) is not None, begin=heading.end() if heading else 0
    )
    if not found.turns:
        raise ParseError(f"{name}: a Google Meet transcript without 'Speaker: text' lines")
    title = next((match for match in map(TITLE.match, found.preamble) if match), None)
    return ParsedDocument(
        kind="transcript",
        format="google-meet",
        text=text,
        turns=found.turns,
        title=(title["title"] or None) if title else None,
        meeting_date=_date(title["date"]) if title and title["date"] else _date_line(found.preamble),
        participants=_attendees(found.preamble) or speakers_of(found.turns),
    )


def _attendees(preamble: list[str]) -> list[str]:
    """The names on the line after ``Attendees``."""
    if "Attendees" not in preamble[:-1]:
        return []
    names = preamble[preamble.index("Attendees") + 1]
    return [n for n in (" ".join(part.split()) for part in names.split(",")) if n]


def _date(value: str) -> date | None:
    try:
        return date.fromisoformat(value.replace("/", "-"))
    except ValueError:
        return None


def _date_line(preamble: list[str]) -> date | None:
    """The first line that is only a date (Gemini's notes start with one)."""
    for line in preamble:
        for fmt in DATE_LINE_FORMATS:
            try:
                return datetime.strptime(line, fmt).date()
            except ValueError:
                continue
    return None
