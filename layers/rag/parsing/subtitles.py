"""WebVTT and SRT captions -> a transcript rendered as one ``Speaker: text`` line per turn.

A cue's speaker comes from a ``<v Speaker>`` voice tag (several voices in one cue give
several turns) or a leading ``Speaker:``; otherwise it is "Unknown". Consecutive cues
of the same named speaker are merged into one turn (captioners cut one utterance into
many cues) while the merged text stays under ``MERGE_MAX_CHARS``; "Unknown" cues are
never merged, so a caption file without speakers keeps one turn per cue. Header, NOTE,
STYLE and REGION blocks and cue ids are skipped. Times are seconds.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Literal

from rag.parsing.line_turns import speaker_line
from rag.parsing.model import ParsedDocument
from rag.parsing.turns import UNKNOWN, merge_consecutive, seconds, transcript_of

CaptionFormat = Literal["vtt", "srt"]

_STAMP = r"(?:\d+:)?\d{1,2}:\d{2}(?:[.,]\d{1,3})?"
TIMING = re.compile(rf"^[ \t]*(?P<start>{_STAMP})[ \t]*-->[ \t]*(?P<end>{_STAMP})(?:[ \t].*)?$")
VOICE = re.compile(r"<v(?:\.[^\s.>]+)*[ \t]+([^>]*)>")
# Markup that is not text: tags (<b>, </v>, <c.yellow>, <font ...>), cue timestamps
# (<00:00:01.500>) and SSA overrides some SRT files carry ({\an8}).
MARKUP = re.compile(r"</?[A-Za-z][^>]*>|<\d[\d:.]*>|\{\\[^}]*\}")


@dataclass
class _Cue:
    start: float
    end: float
    lines: list[str]


def parse_captions(text: str, name: str, fmt: CaptionFormat) -> ParsedDocument:
    raw = [
        (speaker, utterance, cue.start, cue.end) for cue in _cues(text) for speaker, utterance in _voices("\n".join(cue.lines))
    ]
    return transcript_of(merge_consecutive(raw), name, fmt, empty="no caption cues with text found")


def _cues(text: str) -> list[_Cue]:
    """Cues in file order: a timing line, then text lines up to a blank line."""
    cues: list[_Cue] = []
    current: _Cue | None = None
    for line in text.split("\n"):
        if timing := TIMING.match(line):
            if current is not None and current.lines and current.lines[-1].strip().isdigit():
                current.lines.pop()  # an SRT counter of the next cue, with no blank line before it
            current = _Cue(seconds(timing["start"]), seconds(timing["end"]), [])
            cues.append(current)
        elif not line.strip():
            current = None
        elif current is not None:
            current.lines.append(line)
    return cues


def _voices(payload: str) -> list[tuple[str, str]]:
    """(speaker, text) parts of one cue's text."""
    parts = VOICE.split(payload)
    found: list[tuple[str, str]] = []
    # VOICE.split gives [text before the first tag, voice, its text, voice, its text, ...].
    if parts[0].strip():
        found.extend(_labelled_lines(parts[0]))
    for voice, said in zip(parts[1::2], parts[2::2]):
        found.append((" ".join(voice.split()) or UNKNOWN, _clean(said)))
    return [(speaker, utterance) for speaker, utterance in found if utterance]


def _labelled_lines(payload: str) -> list[tuple[str, str]]:
    """Lines starting with ``Speaker:`` open a new part; other lines continue the last one."""
    found: list[tuple[str, str]] = []
    for line in _clean_lines(payload):
        labelled = speaker_line(line)
        if labelled is not None:
            found.append(labelled)
        elif found:
            found[-1] = (found[-1][0], f"{found[-1][1]} {line}")
        else:
            found.append((UNKNOWN, line))
    return found


def _clean_lines(payload: str) -> list[str]:
    return [line for line in (_clean(line) for line in payload.split("\n")) if line]


def _clean(payload: str) -> str:
    return " ".join(html.unescape(MARKUP.sub("", payload)).split())
