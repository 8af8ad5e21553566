"""Bytes -> text: UTF-8 only, with errors that say what is wrong with the file."""

from __future__ import annotations

from rag.errors import ParseError

CONTROL = {c for c in range(32) if c not in (9, 10, 12, 13)}


def decode_text(data: bytes, name: str) -> str:
    """UTF-8 text with a BOM stripped and CRLF/CR turned into LF; ParseError otherwise."""
    if b"\x00" in data[:65536]:
        raise ParseError(f"{name}: binary file (contains NUL bytes); expected UTF-8 text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ParseError(
            f"{name}: not valid UTF-8 at byte {exc.start} ({data[exc.start:exc.start + 4]!r}); re-save the file as UTF-8"
        ) from exc
    sample = text[:65536]
    if sample and sum(ord(ch) in CONTROL for ch in sample) > len(sample) * 0.01:
        raise ParseError(f"{name}: binary file (control characters); expected UTF-8 text")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise ParseError(f"{name}: empty file")
    return text
