""".docx -> Markdown-like text read by the text parsers; a Teams transcript saved as .docx -> turns.

The body is read in order with python-docx: a ``Title`` paragraph becomes ``#``, ``Heading n`` (or a
style based on one) ``#`` * (n + 1), so the document's outline is the heading path of its chunks as in
Markdown; list paragraphs become ``- `` items, tables ``| a | b |`` rows (a rule after the first, as
Markdown tables have); other paragraphs are paragraphs, a blank line between blocks. The text parsers
then read it, so a .docx of ``Speaker: text`` lines is a transcript like the same .txt. A Teams
transcript (``teams_docx``) is recognised first and becomes turns.

python-docx (and lxml) is imported only when a .docx arrives.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from rag.errors import ParseError
from rag.parsing import teams_docx
from rag.parsing.model import ParsedDocument

if TYPE_CHECKING:
    from docx.document import Document
    from docx.styles.style import ParagraphStyle
    from docx.table import Table
    from docx.text.paragraph import Paragraph

ParseText = Callable[[str, str], ParsedDocument]

# python-docx reads every part into memory and lxml parses the XML: refused from the ZIP's
# directory before that. 100 MB is ten times the XML of the largest document ingest takes.
MAX_UNZIPPED_BYTES = 100 * 1024 * 1024
# As much text as the largest text file ingest takes (RAG_MAX_OBJECT_BYTES' default, 10 MB).
MAX_TEXT_CHARS = 10 * 1024 * 1024
MAX_HEADING_LEVEL = 6
HEADING_STYLE = re.compile(r"^heading (\d)$", re.IGNORECASE)
BlockKind = Literal["paragraph", "heading", "item", "table"]


@dataclass(frozen=True)
class Block:
    kind: BlockKind
    text: str


def parse_docx(data: bytes, name: str, parse_text: ParseText) -> ParsedDocument:
    """The document's text parsed by ``parse_text`` (format ``docx``), or a Teams transcript (``teams-docx``)."""
    _check_unzipped_size(data, name)
    try:
        import docx

        document = docx.Document(io.BytesIO(data))
        blocks = list(_blocks(document))
        lines = [line for p in document.paragraphs for line in p.text.split("\n")]
        core_title = " ".join((document.core_properties.title or "").split())
    except Exception as exc:  # whatever python-docx or lxml raises on these bytes says they are damaged
        raise ParseError(f"{name}: a damaged .docx file ({type(exc).__name__}: {exc}); save it again") from exc
    if teams_docx.looks_like_teams_transcript(lines):
        return teams_docx.parse_lines(lines, name)
    text = _join(blocks)
    if not text.strip():
        raise ParseError(f"{name}: the .docx holds no text")
    if len(text) > MAX_TEXT_CHARS:
        raise ParseError(f"{name}: the .docx holds {len(text)} characters of text; the limit is {MAX_TEXT_CHARS}")
    parsed = parse_text(text, name)
    parsed.format = "docx"
    # The visible title (a Title paragraph or the first top heading) before the file's properties.
    if not any(block.kind == "heading" for block in blocks) or not parsed.title:
        parsed.title = core_title or parsed.title
    return parsed


def _check_unzipped_size(data: bytes, name: str) -> None:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:  # readable: containers.container_format opened it
        size = sum(info.file_size for info in archive.infolist())
    if size > MAX_UNZIPPED_BYTES:
        raise ParseError(f"{name}: the .docx unzips to {size} bytes; the limit is {MAX_UNZIPPED_BYTES} bytes")


def _blocks(document: Document) -> Iterator[Block]:
    from docx.table import Table

    styles = _style_kinds(document)
    for item in document.iter_inner_content():
        block = _table(item) if isinstance(item, Table) else _paragraph(item, styles)
        if block is not None:
            yield block


# A paragraph style's id -> (its heading level or None, whether it is a list style); None: the default style.
StyleKinds = dict[str | None, tuple[int | None, bool]]


def _style_kinds(document: Document) -> StyleKinds:
    """Every paragraph style once (python-docx's ``paragraph.style`` scans all styles at each call)."""
    from docx.enum.style import WD_STYLE_TYPE

    kinds: StyleKinds = {}
    for style in document.styles:
        if style.type == WD_STYLE_TYPE.PARAGRAPH:
            kinds[style.style_id] = (_heading_level(style), (style.name or "").startswith("List"))
    default = document.styles.default(WD_STYLE_TYPE.PARAGRAPH)
    kinds[None] = kinds.get(default.style_id, (None, False)) if default is not None else (None, False)
    return kinds


def _paragraph(paragraph: Paragraph, styles: StyleKinds) -> Block | None:
    text = paragraph.text.strip()
    if not text:
        return None
    style_id = paragraph._p.style
    level, list_style = styles.get(style_id, styles[None])
    if level is not None:
        return Block("heading", f"{'#' * level} {' '.join(text.split())}")
    pPr = paragraph._p.pPr
    listed = list_style or (pPr is not None and pPr.numPr is not None)
    return Block("item", f"- {text}") if listed else Block("paragraph", text)


def _heading_level(style: ParagraphStyle | None) -> int | None:
    """1 for ``Title``, n + 1 for ``Heading n`` or a style based on it; None for body text."""
    seen = 0
    while style is not None and seen < 10:  # base styles chain; a cycle would be a broken file
        name = style.name or ""
        if name.lower() == "title":
            return 1
        if match := HEADING_STYLE.match(name):
            return min(int(match[1]) + 1, MAX_HEADING_LEVEL)
        style = style.base_style
        seen += 1
    return None


def _table(table: Table) -> Block | None:
    rows = []
    for row in table.rows:
        cells = []
        previous = None
        for cell in row.cells:
            if previous is not None and cell._tc is previous:  # a merged cell repeats across its span
                continue
            previous = cell._tc
            cells.append(" ".join(cell.text.split()).replace("|", "\\|"))
        if any(cells):
            rows.append(f"| {' | '.join(cells)} |")
    if not rows:
        return None
    if len(rows) > 1:
        width = rows[0].count(" | ") + 1
        rows.insert(1, f"| {' | '.join(['---'] * width)} |")
    return Block("table", "\n".join(rows))


def _join(blocks: list[Block]) -> str:
    """Blocks separated by a blank line; the items of one list by a line break."""
    parts: list[str] = []
    for i, block in enumerate(blocks):
        if i:
            parts.append("\n" if block.kind == "item" and blocks[i - 1].kind == "item" else "\n\n")
        parts.append(block.text)
    return "".join(parts)
