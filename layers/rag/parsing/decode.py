"""Bytes -> text: UTF-8 only, with errors that say what is wrong with the file and what to do."""

from __future__ import annotations

from rag.errors import ParseError

BOM = "\ufeff"
# C0 controls that never occur in text (tab, LF, FF and CR do), plus DEL.
CONTROL_BYTES = bytes(c for c in range(32) if c not in (9, 10, 12, 13)) + b"\x7f"
SAMPLE_BYTES = 65536
# Real text has almost none; binary data has ~11% (28 of 256 byte values).
BINARY_CONTROL_SHARE = 0.05


def decode_text(data: bytes, name: str) -> str:
    """UTF-8 text, BOM stripped, CRLF and CR turned into LF; ParseError naming ``name`` otherwise."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ParseError(f"{name}: UTF-16 text (byte order mark found); re-save the file as UTF-8")
    nul = data.find(b"\x00")
    if nul >= 0:
        raise ParseError(f"{name}: binary file: NUL byte at byte {nul}; expected UTF-8 text")
    sample = data[:SAMPLE_BYTES]
    controls = len(sample) - len(sample.translate(None, CONTROL_BYTES))
    if controls > len(sample) * BINARY_CONTROL_SHARE:
        raise ParseError(f"{name}: binary file: {controls} control bytes in the first {len(sample)}; expected UTF-8 text")
    try:
        # Plain "utf-8" (not "utf-8-sig") so the reported offset counts the BOM too.
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = data[exc.start : exc.start + 4]
        raise ParseError(
            f"{name}: not valid UTF-8 at byte {exc.start}: {bad!r} ({exc.reason}){_legacy_hint(data)}; re-save the file as UTF-8"
        ) from exc
    text = text.removeprefix(BOM).replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise ParseError(f"{name}: empty file")
    return text


def _legacy_hint(data: bytes) -> str:
    # Most non-UTF-8 text files in the wild are Windows-1252 / Latin-1 exports.
    try:
        data.decode("cp1252")
    except UnicodeDecodeError:
        return ""
    return ", it looks like Windows-1252 / Latin-1"
