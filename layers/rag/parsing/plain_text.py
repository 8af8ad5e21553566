"""Plain-text documents: one section, with an empty heading path, over the whole text."""

from __future__ import annotations

from rag.parsing.model import ParsedDocument, Section

MAX_TITLE_CHARS = 120


def parse_plain_text(text: str, name: str) -> ParsedDocument:
    # A short first line is how plain-text documents name themselves; a long one is prose.
    first_line = next((line.strip() for line in text.split("\n") if line.strip()), "")
    return ParsedDocument(
        kind="document",
        format="text",
        text=text,
        sections=[Section((), 0, len(text))],
        title=first_line if len(first_line) <= MAX_TITLE_CHARS else None,
    )
