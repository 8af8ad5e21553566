"""bytes -> ParsedDocument: a PDF or .docx has its text extracted, other files are decoded as UTF-8; the
format of the text is detected from the content and its parser runs. Formats no parser reads fail naming
themselves (rag.parsing.containers)."""

from __future__ import annotations

from collections.abc import Callable

from rag.parsing.containers import container_format
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
    container = container_format(data, filename)
    # pypdf and python-docx (with lxml) load only when such a file arrives: no cold start pays for them.
    if container == "pdf":
        from rag.parsing.pdf import parse_pdf

        return parse_pdf(data, filename, parse_text)
    if container == "docx":
        from rag.parsing.word import parse_docx

        return parse_docx(data, filename, parse_text)
    return parse_text(decode_text(data, filename), filename)


def parse_text(text: str, filename: str) -> ParsedDocument:
    """Parse decoded (or extracted) text in the format its content shows."""
    return PARSERS[detect_format(text, filename)](text, filename)
