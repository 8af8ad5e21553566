"""Microsoft Teams transcripts downloaded as .docx: the paragraphs' lines -> turns, as from a Teams VTT.

Teams writes a header (the meeting's name with ``-YYYYMMDD_HHMMSS-Meeting Transcript``, the date,
the duration, ``Name started transcription``), then for each turn a line ``Name   0:03`` (the speaker,
two or more spaces or a tab, the time from the start) and the words on the paragraph(s) after it.
Older exports (Teams before 2022, Microsoft Stream) write each cue as ``0:0:0.0 --> 0:0:4.520``, the
speaker, then the words. Either way a speaker's consecutive pieces are merged into one turn, as for
captions, and the text is rendered as ``Speaker: text`` lines. ``... started/stopped transcription``
lines are events, not turns.
"""

from __future__ import annotations

import re
from datetime import date, datetime

from rag.parsing.model import ParsedDocument
from rag.parsing.turns import RawTurn, merge_consecutive, seconds, transcript_of

_CLOCK = r"\d{1,2}(?::\d{2}){1,2}"
_CUE_STAMP = r"\d+(?::\d+){1,2}(?:[.,]\d+)?"
# The speaker starts with a letter; the gap before the time is what tells it from prose ("meet at 10:30").
SPEAKER_STAMP = re.compile(rf"^(?P<speaker>[^\W\d_][^\t]*?)(?:[ \u00a0]{{2,}}|\t)[ \t\u00a0]*(?P<time>{_CLOCK})$")
CUE_TIMING = re.compile(rf"^(?P<start>{_CUE_STAMP})[ \t]*-->[ \t]*(?P<end>{_CUE_STAMP})$")
EVENT = re.compile(r"^.{1,200}\b(?:started|stopped) transcription$")
MEETING_HEADER = re.compile(r"^(?P<title>.+?)-(?P<date>\d{8})_\d{6}-Meeting (?:Transcript|Recording)$")
HEADER_DATE_FORMATS = ("%d %B %Y", "%B %d, %Y", "%Y-%m-%d")
MAX_SPEAKER_CHARS = 80
MAX_SPEAKER_WORDS = 8
# Of the non-empty lines, at least this share (and two) open a turn: about 1/2 for the current
# layout (a speaker line, then the words), 1/3 for the cue layout.
MIN_TURN_SHARE = 0.2
MIN_TURNS = 2


def looks_like_teams_transcript(lines: list[str]) -> bool:
    kept = [line.strip() for line in lines if line.strip()]
    turns = sum(1 for line in kept if CUE_TIMING.match(line) or _speaker_stamp(line) is not None)
    return turns >= MIN_TURNS and turns >= MIN_TURN_SHARE * len(kept)


def parse_lines(lines: list[str], name: str) -> ParsedDocument:
    raw: list[RawTurn] = []
    header: list[str] = []
    cue: tuple[float, float] | None = None  # a cue's times, until its speaker line
    for line in (line.strip() for line in lines):
        if not line or EVENT.match(line):
            continue
        if timing := CUE_TIMING.match(line):
            cue = (seconds(timing["start"]), seconds(timing["end"]))
        elif cue is not None:
            raw.append((line, "", *cue))
            cue = None
        elif stamp := _speaker_stamp(line):
            raw.append((stamp[0], "", stamp[1], None))
        elif raw:
            speaker, text, start, end = raw[-1]
            raw[-1] = (speaker, f"{text} {line}" if text else line, start, end)
        else:
            header.append(line)
    parsed = transcript_of(merge_consecutive(raw), name, "teams-docx", empty="no Teams transcript turns found")
    parsed.title, parsed.meeting_date = _meeting(header)
    return parsed


def _speaker_stamp(line: str) -> tuple[str, float] | None:
    match = SPEAKER_STAMP.match(line)
    if match is None:
        return None
    speaker = " ".join(match["speaker"].split())
    if len(speaker) > MAX_SPEAKER_CHARS or len(speaker.split()) > MAX_SPEAKER_WORDS:
        return None
    return speaker, seconds(match["time"])


def _meeting(header: list[str]) -> tuple[str | None, date | None]:
    """Title and date from the header: ``Name-20261102_150012-Meeting Transcript``, then a date line."""
    if not header:
        return None, None
    title: str | None = header[0][:200]
    meeting_date = None
    if match := MEETING_HEADER.match(header[0]):
        title = match["title"].strip() or None
        try:
            meeting_date = datetime.strptime(match["date"], "%Y%m%d").date()
        except ValueError:
            meeting_date = None
    for line in header[1:3]:
        if meeting_date is not None:
            break
        meeting_date = _header_date(line)
    return title, meeting_date


def _header_date(line: str) -> date | None:
    """``2 November 2026, 03:00pm`` / ``November 2, 2026, 3:00PM`` -> the date (the time dropped)."""
    candidate = line.rsplit(",", 1)[0].strip() if line.count(",") else line
    for fmt in HEADER_DATE_FORMATS:
        for text in (candidate, line):
            try:
                return datetime.strptime(text, fmt).date()
            except ValueError:
                continue
    return None
