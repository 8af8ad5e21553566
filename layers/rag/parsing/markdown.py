"""Markdown documents, split into sections on ATX headings (``#`` inside code fences is not a heading)."""

from __future__ import annotations

import re

from rag.parsing.model import ParsedDocument, Section

HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
FENCE = re.compile(r"^ {0,3}(```|~~~)")


def headings(text: str) -> list[tuple[int, int, str]]:
    """(offset, level, title) of every heading outside code fences."""
    found = []
    fence: str | None = None
    offset = 0
    for line in text.split("\n"):
        if match := FENCE.match(line):
            fence = None if fence == match[1] else (fence or match[1])
        elif fence is None and (match := HEADING.match(line)):
            found.append((offset, len(match[1]), match[2].strip()))
        offset += len(line) + 1
    return found


def parse_markdown(text: str, name: str) -> ParsedDocument:
    sections: list[Section] = []
    found = headings(text)
    first = found[0][0] if found else len(text)
    if text[:first].strip():
        sections.append(Section((), 0, first))
    stack: list[tuple[int, str]] = []
    for i, (offset, level, title) in enumerate(found):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        end = found[i + 1][0] if i + 1 < len(found) else len(text)
        sections.append(Section(tuple(t for _, t in stack), offset, end))
    h1 = next((title for _, level, title in found if level == 1), None)
    return ParsedDocument(kind="document", format="markdown", text=text, sections=sections, title=h1)


def has_headings(text: str) -> bool:
    return bool(headings(text))
