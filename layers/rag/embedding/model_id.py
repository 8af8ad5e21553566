"""The id rows record for the vectors' space: which model, and at which size.

Vectors compare only within one space, and one id is one space: searches filter on it and
each id has a partial HNSW index of its own (``rag.store.migrations``). OpenAI's
text-embedding-3 models and Titan V2 shorten their vectors on request, so the same model at
two sizes is two spaces; a size other than the model's own is part of the id
(``openai/text-embedding-3-small@256``). A model's own size adds nothing, so ids recorded
before sizes were named stay valid. Plain data, no settings: the CDK app computes the same
id for its migration (infra/config.py).
"""

from __future__ import annotations

# Each model's own (full) output size. A model missing here always has its size in the id.
NATIVE_DIMENSIONS: dict[str, int] = {
    "all-MiniLM-L6-v2": 384,
    "all-mpnet-base-v2": 768,
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
    "amazon.titan-embed-text-v2:0": 1024,
}


def embedding_model_id(provider: str, model: str, dimension: int, *, quantized: bool = False) -> str:
    """``provider/model``, ``-int8`` for a quantized local model, ``@dimension`` unless it is the model's own."""
    size = "" if NATIVE_DIMENSIONS.get(model) == dimension else f"@{dimension}"
    return f"{provider}/{model}{'-int8' if quantized else ''}{size}"
