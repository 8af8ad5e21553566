"""Plain-text documents: one section over the whole text."""

from __future__ import annotations

from rag.parsing.model import ParsedDocument, Section


def parse_plain_text(text: str, name: str) -> ParsedDocument:
    first_line = next((line.strip() for line in text.split("\n") if line.strip()), "")
    return ParsedDocument(
        kind="document",
        format="text",
        text=text,
        sections=[Section((), 0, len(text))],
        title=first_line if len(first_line) <= 120 else None,
    )
