"""bytes -> ParsedDocument: decode, detect the format from the content, run its parser."""

from __future__ import annotations

from collections.abc import Callable

from rag.parsing.decode import decode_text
from rag.parsing.detect import Format, detect_format
from rag.parsing.json_turns import parse_json_text
from rag.parsing.markdown import parse_markdown
from rag.parsing.model import Chunk, DocumentKind, ParsedDocument, Section, Turn
from rag.parsing.plain_text import parse_plain_text
from rag.parsing.subtitles import parse_captions
from rag.parsing.transcript_txt import parse_transcript_txt

__all__ = [
    "Chunk",
    "DocumentKind",
    "Format",
    "ParsedDocument",
    "Section",
    "Turn",
    "detect_format",
    "parse_document",
]

PARSERS: dict[Format, Callable[[str, str], ParsedDocument]] = {
    "vtt": lambda text, name: parse_captions(text, name, "vtt"),
    "srt": lambda text, name: parse_captions(text, name, "srt"),
    "json": parse_json_text,
    "transcript-txt": parse_transcript_txt,
    "markdown": parse_markdown,
    "text": parse_plain_text,
}


def parse_document(data: bytes, filename: str) -> ParsedDocument:
    """Parse a file's bytes; ParseError (naming ``filename``) when it cannot be read."""
    text = decode_text(data, filename)
    return PARSERS[detect_format(text, filename)](text, filename)
