"""Microsoft Teams transcripts downloaded as .docx: the paragraphs' lines -> turns, as from a Teams VTT.

Teams writes a header (the meeting's name with ``-YYYYMMDD_HHMMSS-Meeting Transcript``, the date,
the duration, ``Name started transcription``), then for each turn a line ``Name   0:03`` (the speaker,
spaces or a tab, the time from the start) and the words on the paragraph(s) after it. Older exports
(Teams before 2022, Microsoft Stream) write each cue as ``0:0:0.0 --> 0:0:4.520``, the speaker, then
the words; some put the speaker and the cue's times on one line. Either way a speaker's consecutive pieces are merged into one turn, as for
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
_NAME = r"(?P<speaker>[^\W\d_][^\t]*?)"
# The speaker starts with a letter. Teams separates the time by several spaces (or a tab); a single
# space is taken only in a file with no such line, since prose ends with a time too ("meet at 10:30").
SPEAKER_STAMP = re.compile(rf"^{_NAME}(?:[ \u00a0]{{2,}}|\t)[ \t\u00a0]*(?P<time>{_CLOCK})$")
SPEAKER_STAMP_ONE_SPACE = re.compile(rf"^{_NAME}[ \u00a0](?P<time>{_CLOCK})$")
SPEAKER_CUE = re.compile(rf"^{_NAME}[ \t\u00a0]+(?P<start>{_CUE_STAMP})[ \t]*-->[ \t]*(?P<end>{_CUE_STAMP})$")
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
    turns = sum(1 for line in kept if CUE_TIMING.match(line)) + len(_openings(kept))
    return turns >= MIN_TURNS and turns >= MIN_TURN_SHARE * len(kept)


def parse_lines(lines: list[str], name: str) -> ParsedDocument:
    kept = [line.strip() for line in lines if line.strip() and not EVENT.match(line.strip())]
    openings = _openings(kept)
    raw: list[RawTurn] = []
    header: list[str] = []
    cue: tuple[float, float] | None = None  # a cue's times, until its speaker line
    for i, line in enumerate(kept):
        if timing := CUE_TIMING.match(line):
            cue = (seconds(timing["start"]), seconds(timing["end"]))
        elif cue is not None:
            raw.append((line, "", *cue))
            cue = None
        elif i in openings:
            raw.append((openings[i][0], "", *openings[i][1:]))
        elif raw:
            speaker, text, start, end = raw[-1]
            raw[-1] = (speaker, f"{text} {line}" if text else line, start, end)
        else:
            header.append(line)
    parsed = transcript_of(merge_consecutive(raw), name, "teams-docx", empty="no Teams transcript turns found")
    parsed.title, parsed.meeting_date = _meeting(header)
    return parsed


def _openings(lines: list[str]) -> dict[int, tuple[str, float, float | None]]:
    """Line index -> (speaker, start, end) of each line that opens a turn (``Name   0:03``, ``Name 0:0:1.5 --> 0:0:4``)."""
    one_space = not any(SPEAKER_STAMP.match(line) for line in lines)
    # In the cue layout the speaker follows the times: a line ending with a time is words ("at 10:30").
    cue_layout = any(CUE_TIMING.match(line) for line in lines)
    stamp = SPEAKER_STAMP_ONE_SPACE if one_space else SPEAKER_STAMP
    found: dict[int, tuple[str, float, float | None]] = {}
    for i in reversed(range(len(lines))):  # backwards: whether the next line opens a turn is known
        if match := SPEAKER_CUE.match(lines[i]):
            start, end = seconds(match["start"]), seconds(match["end"])
        elif not cue_layout and (match := stamp.match(lines[i])):
            # With a single space, a line is a speaker's only if words follow it (not a speaker line, not the end).
            if one_space and (i + 1 == len(lines) or i + 1 in found):
                continue
            start, end = seconds(match["time"]), None
        else:
            continue
        speaker = " ".join(match["speaker"].split())
        if len(speaker) <= MAX_SPEAKER_CHARS and len(speaker.split()) <= MAX_SPEAKER_WORDS:
            found[i] = (speaker, start, end)
    return found


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
