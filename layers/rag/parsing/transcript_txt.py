"""``.txt`` transcripts: one ``Speaker: text`` turn per line, or a meeting tool's text export.

Turn i is the i-th turn line (0-based); blank lines are skipped and never shift the
numbering. A non-empty line without a speaker continues the turn before it (its text
is appended and the turn's span extended); a line holding only a timestamp is the start
time of the turn after it; lines before the first turn are a preamble whose first line
is the title. The document text is the decoded file as is, so a turn's
``start_char:end_char`` is its own line(s) in the original.

Exports with a shape of their own (``TEXT_FORMATS``: Zoom's chat, Otter.ai, Google Meet)
are recognised from their content and read by their own parsers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rag.errors import ParseError
from rag.parsing import google_meet, otter, zoom_chat
from rag.parsing.line_turns import scan_turns, speaker_line, speaker_opening
from rag.parsing.model import ParsedDocument

__all__ = ["TEXT_FORMATS", "TextFormat", "parse_transcript_txt", "speaker_line", "text_format"]


@dataclass(frozen=True)
class TextFormat:
    matches: Callable[[str], bool]
    parse: Callable[[str, str], ParsedDocument]


# The most particular first: a Google Meet transcript is ``Speaker: text`` lines too.
TEXT_FORMATS = (
    TextFormat(zoom_chat.matches, zoom_chat.parse),
    TextFormat(otter.matches, otter.parse),
    TextFormat(google_meet.matches, google_meet.parse),
)


def text_format(text: str) -> TextFormat | None:
    """The meeting tool export ``text`` is, if any."""
    return next((fmt for fmt in TEXT_FORMATS if fmt.matches(text)), None)


def parse_transcript_txt(text: str, name: str) -> ParsedDocument:
    if (export := text_format(text)) is not None:
        return export.parse(text, name)
    found = scan_turns(text, speaker_opening)
    if not found.turns:
        raise ParseError(f"{name}: no 'Speaker: text' lines found")
    return ParsedDocument(
        kind="transcript",
        format="transcript-txt",
        text=text,
        turns=found.turns,
        title=found.preamble[0][:200] if found.preamble else None,
        participants=list(dict.fromkeys(t.speaker for t in found.turns)),
    )
