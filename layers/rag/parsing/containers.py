"""What a file is, from its first bytes: a PDF or a .docx to extract text from, text, or a format no parser reads.

Formats are told by their magic numbers (``%PDF-``; a ZIP holding ``word/document.xml``; ID3 or an MPEG
frame for MP3; ``ftyp`` boxes for MP4 and M4A; ...), never by the name alone: a transcript saved as
``notes.pdf`` by mistake is still read as text, and a PDF named ``notes`` is still a PDF. A format no parser
reads gets a ParseError that names it and says what to do (transcribe an audio file, run OCR on an image,
export a presentation as PDF), never an encoding guess.
"""

from __future__ import annotations

import io
from pathlib import PurePosixPath
from typing import Literal

from rag.errors import ParseError

Container = Literal["pdf", "docx"]

# The PDF header may follow some junk (readers tolerate 1024 bytes of it).
PDF_HEADER_WINDOW = 1024
ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # .doc, .xls, .ppt, .msg; and encrypted Office documents

TRANSCRIBE = "transcribe it first and upload the transcript"
OCR = "run OCR on it first and upload the text"

# (prefix, what it is): checked in order; the first match names the file.
PREFIXES: tuple[tuple[bytes, str], ...] = (
    # ID3v2.2-2.4 (a version byte, then revision 0): a text note may start with "ID3 tags".
    (b"ID3\x02\x00", f"an audio file (MP3); {TRANSCRIBE}"),
    (b"ID3\x03\x00", f"an audio file (MP3); {TRANSCRIBE}"),
    (b"ID3\x04\x00", f"an audio file (MP3); {TRANSCRIBE}"),
    (b"fLaC\x00", f"an audio file (FLAC); {TRANSCRIBE}"),
    (b"fLaC\x80", f"an audio file (FLAC); {TRANSCRIBE}"),
    (b"OggS\x00", f"an audio file (Ogg); {TRANSCRIBE}"),
    (b"#!AMR\n", f"an audio file (AMR); {TRANSCRIBE}"),
    (b"0&\xb2u\x8ef\xcf\x11", f"an audio or video file (Windows Media); {TRANSCRIBE}"),
    (b"\x1a\x45\xdf\xa3", f"a video file (WebM / Matroska); {TRANSCRIBE}"),
    (b"\x89PNG\r\n\x1a\n", f"an image (PNG); {OCR}"),
    (b"\xff\xd8\xff", f"an image (JPEG); {OCR}"),
    (b"GIF87a", f"an image (GIF); {OCR}"),
    (b"GIF89a", f"an image (GIF); {OCR}"),
    (b"II*\x00", f"an image (TIFF); {OCR}"),
    (b"MM\x00*", f"an image (TIFF); {OCR}"),
    (b"{\\rtf", "an RTF document, which is not supported; save it as .docx or PDF"),
    (b"\x1f\x8b", "a gzip archive; upload the files it holds one by one"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive; upload the files it holds one by one"),
    (b"Rar!\x1a\x07", "a RAR archive; upload the files it holds one by one"),
)
# MPEG audio frame sync (11 bits set): MP3 without an ID3 tag, and ADTS AAC (layer bits 00).
MPEG_AUDIO = {0xFA: "MP3", 0xFB: "MP3", 0xF2: "MP3", 0xF3: "MP3", 0xE2: "MP3", 0xE3: "MP3", 0xF1: "AAC", 0xF9: "AAC"}
RIFF_KINDS = {
    b"WAVE": f"an audio file (WAV); {TRANSCRIBE}",
    b"AVI ": f"a video file (AVI); {TRANSCRIBE}",
    b"WEBP": f"an image (WebP); {OCR}",
}
# ISO base media files (MP4 family): the major brand of the ``ftyp`` box at byte 4.
AUDIO_BRANDS = {b"M4A ": "M4A", b"M4B ": "M4A", b"F4A ": "M4A"}
IMAGE_BRANDS = {b"heic": "HEIC", b"heix": "HEIC", b"mif1": "HEIF", b"avif": "AVIF"}
QUICKTIME_BRAND = b"qt  "
# A ZIP is told by the part that makes it what it is.
ZIP_PARTS: tuple[tuple[str, str], ...] = (
    ("ppt/presentation.xml", "a PowerPoint presentation (.pptx), which is not supported; export it as PDF"),
    ("xl/workbook.xml", "an Excel workbook (.xlsx), which is not supported; save the sheet as CSV or export it as PDF"),
    ("visio/document.xml", "a Visio drawing (.vsdx), which is not supported; export it as PDF"),
)
OPENDOCUMENT_MIMETYPE = b"application/vnd.oasis.opendocument."
EPUB_MIMETYPE = b"application/epub+zip"
OLE2_BY_SUFFIX = {
    ".doc": "a Word 97-2003 document (.doc), which is not supported; save it as .docx or PDF",
    ".xls": "an Excel 97-2003 workbook (.xls), which is not supported; save the sheet as CSV or export it as PDF",
    ".ppt": "a PowerPoint 97-2003 presentation (.ppt), which is not supported; export it as PDF",
    ".msg": "an Outlook message (.msg), which is not supported; save its text or attachments",
    # Office encrypts a password-protected .docx/.xlsx/.pptx into this older container.
    ".docx": "a password-protected Word document; save it without the password and upload it again",
    ".xlsx": "a password-protected Excel workbook, which is not supported; save the sheet as CSV or export it as PDF",
    ".pptx": "a password-protected PowerPoint presentation, which is not supported; export it as PDF",
}
OLE2_UNKNOWN = (
    "a legacy Office file (.doc, .xls, .ppt) or a password-protected Office document, which is not supported;"
    " save it as .docx or PDF without a password"
)


def container_format(data: bytes, name: str) -> Container | None:
    """``pdf`` or ``docx`` when the bytes are one, None for anything else that may be text.

    ParseError naming ``name`` for a format no parser reads, and for a file named ``.pdf`` or ``.docx``
    whose bytes are neither that nor text.
    """
    suffix = PurePosixPath(name).suffix.lower()
    # Junk before the header is tolerated in a file named .pdf only: a text note may quote "%PDF-".
    if data.startswith(b"%PDF-") or (suffix == ".pdf" and b"%PDF-" in data[:PDF_HEADER_WINDOW]):
        return "pdf"
    if data.startswith(ZIP_MAGIC):
        return _zip_format(data, name)
    if data.startswith(OLE2_MAGIC):
        raise ParseError(f"{name}: {OLE2_BY_SUFFIX.get(suffix, OLE2_UNKNOWN)}")
    if (what := _media_format(data)) is not None:
        raise ParseError(f"{name}: {what}")
    if suffix in (".pdf", ".docx") and not _may_be_text(data):
        expected = "a PDF file (it does not start with %PDF-)" if suffix == ".pdf" else "a .docx file (it is no ZIP archive)"
        raise ParseError(f"{name}: not {expected}")
    return None


def _media_format(data: bytes) -> str | None:
    for prefix, what in PREFIXES:
        if data.startswith(prefix):
            return what
    if len(data) >= 2 and data[0] == 0xFF and data[1] in MPEG_AUDIO:
        return f"an audio file ({MPEG_AUDIO[data[1]]}); {TRANSCRIBE}"
    if data.startswith(b"RIFF") and data[8:12] in RIFF_KINDS:
        return RIFF_KINDS[data[8:12]]
    if data[4:8] == b"ftyp":
        brand = data[8:12]
        if brand in AUDIO_BRANDS:
            return f"an audio file ({AUDIO_BRANDS[brand]}); {TRANSCRIBE}"
        if brand in IMAGE_BRANDS:
            return f"an image ({IMAGE_BRANDS[brand]}); {OCR}"
        return f"a video file ({'QuickTime' if brand == QUICKTIME_BRAND else 'MP4'}); {TRANSCRIBE}"
    return None


def _zip_format(data: bytes, name: str) -> Container:
    import zipfile

    docx = PurePosixPath(name).suffix.lower() == ".docx"
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
            mimetype = archive.read("mimetype")[:100] if "mimetype" in names else b""
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, KeyError) as exc:
        what = "a damaged .docx file" if docx else "a damaged ZIP archive or Office document"
        raise ParseError(f"{name}: {what} (not a readable ZIP archive); save it again") from exc
    if "word/document.xml" in names:
        return "docx"
    for part, what in ZIP_PARTS:
        if part in names:
            raise ParseError(f"{name}: {what}")
    if mimetype.startswith(OPENDOCUMENT_MIMETYPE):
        suffix = PurePosixPath(name).suffix.lower() or ".odt"
        raise ParseError(f"{name}: an OpenDocument file ({suffix}), which is not supported; save it as .docx or PDF")
    if mimetype.startswith(EPUB_MIMETYPE):
        raise ParseError(f"{name}: an EPUB book, which is not supported; export it as PDF")
    if docx:
        raise ParseError(f"{name}: a damaged .docx file (it has no word/document.xml); save it again")
    raise ParseError(f"{name}: a ZIP archive; upload the files it holds one by one")


def _may_be_text(data: bytes) -> bool:
    """No NUL byte and valid UTF-8 at the start: what ``decode_text`` would read (decided there)."""
    head = data[:4096]
    if b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start > len(head) - 4  # a character cut at the window's end
    return True
