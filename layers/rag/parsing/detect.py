"""Which parser reads a file: decided by its content, with the extension breaking ties.

In order:
1. first line ``WEBVTT`` -> ``vtt``; an SRT cue (counter line, then a timing line) at
   the start -> ``srt``; a ``.vtt``/``.srt`` file with a cue timing line near the top
   -> that format.
2. a ``.json`` file -> ``json`` (a wrong shape is an error, never plain text); any
   other file that parses as a JSON list of turns, ``{"turns": [...]}`` or a speech
   service's output (Amazon Transcribe, Whisper, AssemblyAI, Deepgram) -> ``json``.
3. a meeting tool's text export (Zoom chat, Otter.ai, Google Meet: ``transcript_txt.TEXT_FORMATS``)
   -> ``transcript-txt``, whose parser reads it as that export.
4. a ``.md`` file with headings -> ``markdown``: a structured document, even if many
   of its lines look like ``Key: value`` turns.
5. at least two lines, and 60% of the non-empty ones (timestamp lines aside), are ``Speaker: text`` ->
   ``transcript-txt`` (whatever the extension: a transcript saved as ``.md`` or
   without an extension is still a transcript).
6. headings, or a ``.md`` extension -> ``markdown``; anything else -> ``text``.
"""

from __future__ import annotations

import json
import re
from pathlib import PurePosixPath
from typing import Literal

from rag.parsing.json_turns import looks_like_json_transcript
from rag.parsing.line_turns import count_time_marks, speaker_line
from rag.parsing.markdown import has_headings
from rag.parsing.subtitles import TIMING
from rag.parsing.transcript_txt import text_format

Format = Literal["vtt", "srt", "json", "transcript-txt", "markdown", "text"]

MARKDOWN_SUFFIXES = frozenset({".md", ".markdown"})
CAPTION_SUFFIXES = {".vtt": "vtt", ".srt": "srt"}
WEBVTT = re.compile(r"^WEBVTT(?:[ \t]|$)")
SRT_COUNTER = re.compile(r"^\d+[ \t]*$")
TRANSCRIPT_SHARE = 0.6
CAPTION_PROBE_LINES = 30


def detect_format(text: str, filename: str) -> Format:
    suffix = PurePosixPath(filename).suffix.lower()
    lines = text.lstrip().split("\n", CAPTION_PROBE_LINES)[:CAPTION_PROBE_LINES]
    if WEBVTT.match(lines[0]):
        return "vtt"
    if len(lines) > 1 and SRT_COUNTER.match(lines[0]) and TIMING.match(lines[1]):
        return "srt"
    if suffix in CAPTION_SUFFIXES and any(TIMING.match(line) for line in lines):
        return "vtt" if suffix == ".vtt" else "srt"
    if suffix == ".json" or (lines[0][:1] in ("[", "{") and _json_turns(text)):
        return "json"
    if text_format(text) is not None:
        return "transcript-txt"
    headings = has_headings(text)
    if suffix in MARKDOWN_SUFFIXES and headings:
        return "markdown"
    if looks_like_transcript(text):
        return "transcript-txt"
    if headings or suffix in MARKDOWN_SUFFIXES:
        return "markdown"
    return "text"


def looks_like_transcript(text: str) -> bool:
    """At least two lines, and 60% of the non-empty ones (timestamp lines aside), are ``Speaker: text`` turns."""
    lines = [line for line in text.split("\n") if line.strip()]
    turns = sum(1 for line in lines if speaker_line(line) is not None)
    return turns >= 2 and turns >= TRANSCRIPT_SHARE * (len(lines) - count_time_marks(text))


def _json_turns(text: str) -> bool:
    try:
        return looks_like_json_transcript(json.loads(text))
    except (json.JSONDecodeError, RecursionError):
        return False
