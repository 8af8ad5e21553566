"""Text PostgreSQL can store: a ``text`` value holds no NUL (U+0000) and only valid UTF-8, so no lone
surrogate (U+D800..U+DFFF, half of a UTF-16 pair, which JSON's ``\\u`` escapes can produce)."""

from __future__ import annotations

import re

UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def first_unstorable(text: str) -> re.Match[str] | None:
    """Where ``text`` first holds a character no ``text`` column can store, if it does."""
    return UNSTORABLE.search(text)


def describe_unstorable(char: str) -> str:
    if char == "\x00":
        return "a NUL character (\\u0000), which database text cannot hold"
    return f"a lone surrogate (\\u{ord(char):04x}): half of a UTF-16 pair, not a character"


def storable(text: str, limit: int | None = None) -> str:
    """``text`` with such characters written as ``\\uXXXX`` escapes, cut to ``limit`` characters ("…" last)."""
    text = UNSTORABLE.sub(lambda match: f"\\u{ord(match[0]):04x}", text)
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text
