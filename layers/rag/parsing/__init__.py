"""bytes -> ParsedDocument: the format is detected from the content; the extension breaks ties."""

from __future__ import annotations

import json
import re
from pathlib import PurePosixPath

from rag.errors import ParseError
from rag.parsing.decode import decode_text
from rag.parsing.json_turns import looks_like_json_turns, parse_json_turns
from rag.parsing.markdown import has_headings, parse_markdown
from rag.parsing.model import Chunk, ParsedDocument, Section, Turn
from rag.parsing.plain_text import parse_plain_text
from rag.parsing.subtitles import TIMING, parse_captions
from rag.parsing.transcript_txt import parse_transcript_txt, speaker_line

__all__ = ["Chunk", "ParsedDocument", "Section", "Turn", "parse_document", "looks_like_transcript"]

SRT_START = re.compile(r"^\d+\s*\n")
MARKDOWN_SUFFIXES = {".md", ".markdown"}


def looks_like_transcript(text: str) -> bool:
    """At least two lines, and 60% of the non-empty ones, are ``Speaker: text`` turns."""
    lines = [line for line in text.split("\n") if line.strip()][:2000]
    turns = sum(1 for line in lines if speaker_line(line))
    return turns >= 2 and turns >= 0.6 * len(lines)


def parse_document(data: bytes, filename: str) -> ParsedDocument:
    """Parse a file's bytes; ParseError (naming the file) when it cannot be read as text."""
    suffix = PurePosixPath(filename).suffix.lower()
    text = decode_text(data, filename)
    head = text.lstrip()
    if head.startswith("WEBVTT"):
        return parse_captions(text, filename, "vtt")
    if SRT_START.match(head) and TIMING.match(head.split("\n", 2)[1] if "\n" in head else ""):
        return parse_captions(text, filename, "srt")
    if suffix == ".json" or head[:1] in "[{":
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            if suffix == ".json":
                raise ParseError(f"{filename}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from exc
            value = None
        if suffix == ".json" or looks_like_json_turns(value):
            return parse_json_turns(value, filename)
    headings = has_headings(text)
    if suffix in MARKDOWN_SUFFIXES and headings:
        return parse_markdown(text, filename)  # a structured document, even if lines look like turns
    if looks_like_transcript(text):
        return parse_transcript_txt(text, filename)
    if suffix in MARKDOWN_SUFFIXES or headings:
        return parse_markdown(text, filename)
    return parse_plain_text(text, filename)
