"""PDF -> text, page by page, read by the text parsers (Markdown, plain text, ``Speaker: text``).

pypdf reads the text layer in content order; pages are separated by a blank line. The PDF's bookmarks
(its outline, which Word and most exporters write from the headings) become Markdown headings: a
bookmark's title found as a line of its page is prefixed with ``#`` marks for its depth, so chunks
carry their heading path as they do for Markdown. Nothing else is guessed from fonts or layout.

A PDF whose pages hold no text (a scan) needs OCR first; a password-protected or damaged PDF fails
with a ParseError that says so. pypdf is imported only when a PDF arrives.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rag.errors import ParseError
from rag.parsing.model import ParsedDocument

if TYPE_CHECKING:
    from pypdf import PdfReader

ParseText = Callable[[str, str], ParsedDocument]

# One invocation must parse, embed and write the document (the ingest's 120 s): pypdf reads 200-300
# simple text pages a second here (bench/document_parsing.py; pages with embedded fonts are slower),
# and 2,000 pages is a book.
MAX_PAGES = 2000
# As much text as the largest text file ingest takes (RAG_MAX_OBJECT_BYTES' default, 10 MB).
MAX_TEXT_CHARS = 10 * 1024 * 1024
# A time budget for pages that are slow to read (huge content streams): a quarter of the ingest's 120 s,
# since a file whose embedding continues in a new invocation is parsed again there.
MAX_EXTRACT_SECONDS = 30.0
MAX_HEADING_LEVEL = 6


def parse_pdf(data: bytes, name: str, parse_text: ParseText) -> ParsedDocument:
    """The PDF's text parsed by ``parse_text``; format ``pdf``; ParseError naming ``name`` if unreadable."""
    try:
        reader = _open(data, name)
        page_count = len(reader.pages)
        if page_count == 0:
            raise ParseError(f"{name}: a damaged PDF that cannot be read (it has no pages); export or save it again")
        if page_count > MAX_PAGES:
            raise ParseError(f"{name}: the PDF has {page_count} pages; the limit is {MAX_PAGES}: split it into parts")
        pages = _page_texts(reader, name)
        if not any(page.strip() for page in pages):
            raise ParseError(
                f"{name}: the PDF has no text layer (its {page_count} page{'s' if page_count > 1 else ''} are images,"
                " as a scan is); run OCR on it first and upload the searchable PDF or its text"
            )
        headings = _outline(reader)
        metadata_title = _metadata_title(reader)
    except ParseError:
        raise
    except Exception as exc:  # whatever pypdf raises on these bytes says they are damaged
        raise ParseError(
            f"{name}: a damaged PDF that cannot be read ({type(exc).__name__}: {exc}); export or save it again"
        ) from exc
    text, marked = _with_headings(pages, headings)
    parsed = parse_text(text, name)
    parsed.format = "pdf"
    if not (marked and parsed.title):
        parsed.title = metadata_title or parsed.title
    return parsed


def _open(data: bytes, name: str) -> PdfReader:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    if reader.is_encrypted:
        from pypdf.errors import DependencyError

        try:
            # Many PDFs are encrypted with an empty user password (restrictions only): any reader opens them.
            opened = reader.decrypt("")
        except DependencyError as exc:
            raise ParseError(f"{name}: the PDF is encrypted with a method this reader lacks ({exc})") from exc
        if not opened:
            raise ParseError(f"{name}: the PDF is password-protected; upload it without the password")
    return reader


def _page_texts(reader: PdfReader, name: str) -> list[str]:
    pages: list[str] = []
    size = 0
    started = time.monotonic()
    total = len(reader.pages)
    for page in reader.pages:
        text = _clean(page.extract_text())
        size += len(text)
        if size > MAX_TEXT_CHARS:
            raise ParseError(f"{name}: the PDF holds more than {MAX_TEXT_CHARS} characters of text; split it into parts")
        pages.append(text)
        if len(pages) < total and time.monotonic() - started >= MAX_EXTRACT_SECONDS:
            raise ParseError(
                f"{name}: reading the PDF's text took more than {MAX_EXTRACT_SECONDS:g} s ({len(pages)} of {total} pages"
                " read); split it into parts"
            )
    return pages


def _clean(text: str) -> str:
    """Lines without trailing spaces, LF only, no blank runs at the ends; no NUL or lone surrogate (from a
    broken string encoding), which PostgreSQL refuses."""
    text = text.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return "\n".join(line.rstrip() for line in text.split("\n")).strip("\n")


def _outline(reader: PdfReader) -> list[tuple[str, int, int]]:
    """(title, level from 1, 0-based page) of each bookmark, in outline order."""
    found: list[tuple[str, int, int]] = []

    def walk(items: list[Any], level: int) -> None:
        for item in items:
            if isinstance(item, list):  # the children of the item before it
                walk(item, level + 1)
                continue
            try:
                page = reader.get_destination_page_number(item)
            except Exception:  # a bookmark to nowhere (or to a page gone) is no heading
                continue
            title = " ".join(str(item.title or "").split())
            if title and page is not None and page >= 0:
                found.append((title, level, page))

    walk(list(reader.outline), 1)
    return found


def _with_headings(pages: list[str], headings: list[tuple[str, int, int]]) -> tuple[str, bool]:
    """Pages joined by blank lines, each bookmark's line marked as a Markdown heading; whether any was."""
    lines = [page.split("\n") for page in pages]
    searched_from = [0] * len(pages)  # bookmarks of a page are found in order, each after the one before
    marked = False
    for title, level, page in headings:
        if page >= len(pages):
            continue
        for i in range(searched_from[page], len(lines[page])):
            if " ".join(lines[page][i].split()).casefold() == title.casefold():
                lines[page][i] = f"{'#' * min(level, MAX_HEADING_LEVEL)} {lines[page][i].strip()}"
                searched_from[page] = i + 1
                marked = True
                break
    return "\n\n".join("\n".join(page) for page in lines if any(line.strip() for line in page)), marked


def _metadata_title(reader: PdfReader) -> str | None:
    metadata = reader.metadata
    title = " ".join(str(metadata.title or "").split()) if metadata is not None else ""
    return title or None
