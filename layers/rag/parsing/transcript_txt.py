"""``.txt`` transcripts: one ``Speaker: text`` turn per line.

Turn i is the i-th turn line. A non-empty line without a speaker continues the turn
before it; lines before the first turn are a preamble (its first line, the title).
The document text is the file's text as is, so offsets point into the original.
"""

from __future__ import annotations

import re

from rag.errors import ParseError
from rag.parsing.model import ParsedDocument, Turn

# A speaker: up to 60 characters and 8 words, no colon; then ": " and the utterance.
SPEAKER_LINE = re.compile(r"^\s*(?P<speaker>[^\s:][^:\n]{0,59}?)\s*:[ \t]+(?P<text>\S.*?)\s*$")


def speaker_line(line: str) -> re.Match[str] | None:
    match = SPEAKER_LINE.match(line)
    if match and len(match["speaker"].split()) <= 8:
        return match
    return None


def parse_transcript_txt(text: str, name: str) -> ParsedDocument:
    turns: list[Turn] = []
    preamble: list[str] = []
    offset = 0
    for line in text.split("\n"):
        start, end = offset, offset + len(line)
        offset = end + 1
        if not line.strip():
            continue
        match = speaker_line(line)
        if match:
            turns.append(Turn(len(turns), match["speaker"].strip(), match["text"], start, end))
        elif turns:
            last = turns[-1]
            turns[-1] = Turn(last.index, last.speaker, f"{last.text} {line.strip()}", last.start_char, end)
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
