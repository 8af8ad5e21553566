"""What the query handler refuses before the resolver reads a body: not UTF-8 JSON text, or nested too deep."""

from __future__ import annotations

import re
from typing import Any


def body_problem(event: dict[str, Any]) -> tuple[str, str] | None:
    """A body that is not UTF-8 JSON text, or nests too deep to parse, is refused here, before the resolver reads it."""
    body = event.get("body")
    if not body:
        return None
    content_type = ((event.get("headers") or {}).get("content-type") or "").lower()
    if not content_type.startswith("application/json"):
        return "unsupported_content_type", "send the body as JSON with Content-Type: application/json"
    if event.get("isBase64Encoded"):
        import base64

        try:
            body = base64.b64decode(body).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return "invalid_json", "the request body is not UTF-8 JSON"
    if nests_deeper_than(body, MAX_JSON_DEPTH):
        return "invalid_json", f"expected JSON nested at most {MAX_JSON_DEPTH} levels deep"
    return None


MAX_JSON_DEPTH = 64  # requests nest 3 levels; Python's json recurses per level and fails near 1,000
# A whole string literal (its brackets are text; an unclosed one runs to the end), or one bracket.
_JSON_STRING_OR_BRACKET = re.compile(r'"(?:[^"\\]+|\\.)*"?|[\[\]{}]')


def nests_deeper_than(text: str, limit: int) -> bool:
    """Whether brackets outside string literals open more than ``limit`` levels at some point (not a full parse)."""
    depth = 0
    for match in _JSON_STRING_OR_BRACKET.finditer(text):
        token = match.group()
        if token == "[" or token == "{":
            depth += 1
            if depth > limit:
                return True
        elif token == "]" or token == "}":
            depth -= 1
    return False
