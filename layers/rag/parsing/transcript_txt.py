"""``.txt`` transcripts: one ``Speaker: text`` turn per line.

Turn i is the i-th turn line (0-based); blank lines are skipped and never shift the
numbering. A non-empty line without a speaker continues the turn before it (its text
is appended and the turn's span extended); lines before the first turn are a preamble
whose first line is the title. The document text is the decoded file as is, so a
turn's ``start_char:end_char`` is its own line(s) in the original.
"""

from __future__ import annotations

import re

from rag.errors import ParseError
from rag.parsing.model import ParsedDocument, Turn

# A name starts with a letter (so "10:30 ..." is no speaker) and has at most six words:
# "Project Manager", "Speaker 1", "Dr. Smith", "PhD C", "Jean-Luc O'Neill".
_NAME = r"[^\W\d_][\w.'’&/-]*(?:[ \t]+[\w.'’&/-]+){0,5}"
# An optional role in parentheses, nested once, as in parliamentary records:
# "The Chair (Hon. Anthony Rota (Nipissing, Lib.))".
_ROLE = r"\((?:[^()\n:]|\([^()\n:]*\))*\)"
# The utterance may be empty ("PhD A: "): that line is still a turn, so numbering holds.
SPEAKER_LINE = re.compile(rf"^[ \t]*(?P<speaker>(?P<name>{_NAME})(?:[ \t]*{_ROLE})?)[ \t]*:(?:[ \t]+(?P<text>.*?))?[ \t]*$")
MAX_NAME_CHARS = 60
MAX_SPEAKER_CHARS = 160


def speaker_line(line: str) -> tuple[str, str] | None:
    """``(speaker, utterance)`` when ``line`` is a ``Speaker: text`` turn, else None."""
    match = SPEAKER_LINE.match(line)
    if match is None or len(match["name"]) > MAX_NAME_CHARS or len(match["speaker"]) > MAX_SPEAKER_CHARS:
        return None
    return " ".join(match["speaker"].split()), match["text"] or ""


def parse_transcript_txt(text: str, name: str) -> ParsedDocument:
    turns: list[Turn] = []
    preamble: list[str] = []
    offset = 0
    for line in text.split("\n"):
        start, end = offset, offset + len(line)
        offset = end + 1
        if not line.strip():
            continue
        if parsed := speaker_line(line):
            speaker, utterance = parsed
            turns.append(Turn(len(turns), speaker, utterance, start, end))
        elif turns:
            last = turns[-1]
            joined = f"{last.text} {line.strip()}" if last.text else line.strip()
            turns[-1] = Turn(last.index, last.speaker, joined, last.start_char, end)
        else:
            preamble.append(line.strip())
    if not turns:
        raise ParseError(f"{name}: no 'Speaker: text' lines found")
    return ParsedDocument(
        kind="transcript",
        format="transcript-txt",
        text=text,
        turns=turns,
        title=preamble[0][:200] if preamble else None,
        participants=list(dict.fromkeys(t.speaker for t in turns)),
    )
