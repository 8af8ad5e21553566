"""Markdown documents, split into sections on ATX headings (``#`` .. ``######``).

A section runs from its heading line to the next heading; its heading path is the
titles from the top level down to it ("## B" under "# A" is ``("A", "B")``). Text
before the first heading is a section with an empty path. Lines inside fenced code
blocks and a leading YAML front matter are never headings. The document text is the
decoded file as is.
"""

from __future__ import annotations

import re

from rag.parsing.model import ParsedDocument, Section

HEADING = re.compile(r"^ {0,3}(?P<marks>#{1,6})(?:[ \t]+(?P<title>.*?))?[ \t]*$")
CLOSING_MARKS = re.compile(r"(?:^|[ \t]+)#+$")
FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
FRONT_MATTER = re.compile(r"\A---[ \t]*\n.*?\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)


def headings(text: str) -> list[tuple[int, int, str]]:
    """``(offset, level, title)`` of every heading outside code fences and front matter."""
    found: list[tuple[int, int, str]] = []
    fence: str | None = None  # the opening fence while inside a code block
    front = FRONT_MATTER.match(text)
    offset = front.end() if front else 0
    for line in text[offset:].split("\n"):
        if fence is not None:
            closing = FENCE.match(line)
            if (
                closing
                and closing["fence"][0] == fence[0]
                and len(closing["fence"]) >= len(fence)
                and not closing["info"].strip()
            ):
                fence = None
        elif opening := FENCE.match(line):
            if not (opening["fence"][0] == "`" and "`" in opening["info"]):  # `` ```x` `` is inline code
                fence = opening["fence"]
        elif heading := HEADING.match(line):
            title = CLOSING_MARKS.sub("", heading["title"] or "").strip()
            if title:
                found.append((offset, len(heading["marks"]), title))
        offset += len(line) + 1
    return found


def has_headings(text: str) -> bool:
    return bool(headings(text))


def parse_markdown(text: str, name: str) -> ParsedDocument:
    found = headings(text)
    sections: list[Section] = []
    first = found[0][0] if found else len(text)
    if text[:first].strip():
        sections.append(Section((), 0, first))
    path: list[tuple[int, str]] = []  # (level, title) of the open headings
    for i, (offset, level, title) in enumerate(found):
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, title))
        end = found[i + 1][0] if i + 1 < len(found) else len(text)
        sections.append(Section(tuple(t for _, t in path), offset, end))
    title = next((t for _, level, t in found if level == 1), None)
    return ParsedDocument(kind="document", format="markdown", text=text, sections=sections, title=title)
