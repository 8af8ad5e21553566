"""Text transcripts read line by line: a line that opens a turn, the lines that continue it.

What the ``Speaker: text`` parser and the exports of meeting tools (Otter.ai, Google Meet,
Zoom chat) share. A turn's ``start_char:end_char`` runs from its opening line to its last
line in the text as given, so offsets point into the file itself; blank lines are skipped
and never continue or shift anything; a bare timestamp line (``00:05:00``) is a time mark
for the turn that follows, never part of a turn; lines before the first turn are the
preamble.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from rag.parsing.model import Turn
from rag.parsing.turns import seconds

# A name starts with a letter (so "10:30 ..." is no speaker) and has at most six words:
# "Project Manager", "Speaker 1", "Dr. Smith", "PhD C", "Jean-Luc O'Neill".
NAME = r"[^\W\d_][\w.'’&/-]*(?:[ \t]+[\w.'’&/-]+){0,5}"
# An optional role in parentheses, nested once, as in parliamentary records:
# "The Chair (Hon. Anthony Rota (Nipissing, Lib.))".
_ROLE = r"\((?:[^()\n:]|\([^()\n:]*\))*\)"
# The utterance may be empty ("PhD A: "): that line is still a turn, so numbering holds.
SPEAKER_LINE = re.compile(rf"^[ \t]*(?P<speaker>(?P<name>{NAME})(?:[ \t]*{_ROLE})?)[ \t]*:(?:[ \t]+(?P<text>.*?))?[ \t]*$")
MAX_NAME_CHARS = 60
MAX_SPEAKER_CHARS = 160
CLOCK = r"(?:\d{1,2}:)?\d{1,2}:\d{2}"
TIME_MARK = re.compile(rf"^[ \t]*\[?(?P<time>{CLOCK})\]?[ \t]*$")
TIME_MARKS = re.compile(TIME_MARK.pattern, re.MULTILINE)  # counted over a whole text at once

# (speaker, what the opening line already says, its time in seconds or None)
Opening = tuple[str, str, float | None]


def speaker_line(line: str) -> tuple[str, str] | None:
    """``(speaker, utterance)`` when ``line`` is a ``Speaker: text`` turn, else None."""
    match = SPEAKER_LINE.match(line)
    if match is None or len(match["name"]) > MAX_NAME_CHARS or len(match["speaker"]) > MAX_SPEAKER_CHARS:
        return None
    return " ".join(match["speaker"].split()), match["text"] or ""


def speaker_opening(line: str) -> Opening | None:
    parsed = speaker_line(line)
    return None if parsed is None else (parsed[0], parsed[1], None)


def time_mark(line: str) -> float | None:
    """Seconds of a line holding only a timestamp (``00:05:00``, ``[1:02:05]``), else None."""
    match = TIME_MARK.match(line)
    return None if match is None else seconds(match["time"])


def count_time_marks(text: str) -> int:
    return sum(1 for _ in TIME_MARKS.finditer(text))


def no_line(line: str) -> bool:
    return False


@dataclass
class LineTurns:
    turns: list[Turn] = field(default_factory=list)
    preamble: list[str] = field(default_factory=list)  # stripped non-empty lines before the first turn


def scan_turns(
    text: str, opening: Callable[[str], Opening | None], *, skip: Callable[[str], bool] = no_line, begin: int = 0
) -> LineTurns:
    """Turns opened by ``opening`` lines from ``text[begin:]`` on (what comes before is the
    preamble's); ``skip`` lines (an export's footer) belong to no turn."""
    found = LineTurns(preamble=[line.strip() for line in text[:begin].split("\n") if line.strip()])
    mark: float | None = None
    offset = begin
    for line in text[begin:].split("\n"):
        start, end = offset, offset + len(line)
        offset = end + 1
        if not line.strip() or skip(line):
            continue
        if (opened := opening(line)) is not None:
            speaker, said, at = opened
            found.turns.append(Turn(len(found.turns), speaker, said, start, end, at if at is not None else mark))
            mark = None
        elif (at := time_mark(line)) is not None:
            mark = at
        elif found.turns:
            last = found.turns[-1]
            joined = f"{last.text} {line.strip()}" if last.text else line.strip()
            found.turns[-1] = Turn(last.index, last.speaker, joined, last.start_char, end, last.start_time)
        else:
            found.preamble.append(line.strip())
    return found
