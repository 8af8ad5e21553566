"""OpenAI embeddings (``text-embedding-3-small`` by default) through the official SDK.

Retries with exponential backoff on 429 and 5xx are the SDK's own (``max_retries``).
The key comes from ``OPENAI_API_KEY`` locally or from Secrets Manager in AWS, never
from plain configuration.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

from rag.embedding.tokens import count_cl100k
from rag.errors import EmbeddingError

if TYPE_CHECKING:
    from rag.config import Settings

NATIVE_DIMENSIONS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}
MAX_TOKENS_PER_REQUEST = 250_000  # the API caps a request at 300k tokens; keep a margin


def openai_client(settings: Settings, *, max_retries: int, timeout: float) -> Any:
    """An ``openai.OpenAI`` client on ``OPENAI_BASE_URL`` (also used by the backfill's chat calls)."""
    from openai import OpenAI

    return OpenAI(
        api_key=openai_api_key(settings), base_url=settings.embedding.openai_base_url, max_retries=max_retries, timeout=timeout
    )


def openai_api_key(settings: Settings) -> str:
    """The key from Secrets Manager (``RAG_OPENAI_API_KEY_SECRET``, AWS) or ``OPENAI_API_KEY`` (locally)."""
    if settings.embedding.openai_api_key_secret:
        import boto3

        client = boto3.client("secretsmanager", region_name=settings.aws.region, endpoint_url=settings.aws.endpoint_url)
        secret = client.get_secret_value(SecretId=settings.embedding.openai_api_key_secret)["SecretString"]
        if secret.lstrip().startswith("{"):
            return str(json.loads(secret)["api_key"])
        return str(secret).strip()
    key = os.environ.get("OPENAI_API_KEY")
    if not key:
        raise EmbeddingError("OpenAI needs OPENAI_API_KEY (locally) or RAG_OPENAI_API_KEY_SECRET (AWS)")
    return key


class OpenAIEmbedder:
    max_input_tokens = 8191

    def __init__(self, settings: Settings):
        self.settings = settings
        self.model = settings.embedding.resolved_model
        self.dimension = settings.embedding.resolved_dimension
        self.model_id = settings.embedding.model_id
        self.batch_size = settings.embedding.batch_size

    @cached_property
    def _client(self) -> Any:
        return openai_client(self.settings, max_retries=self.settings.embedding.max_retries, timeout=60.0)

    def count_tokens(self, text: str) -> int:
        return count_cl100k(text)

    def _batches(self, texts: Sequence[str]) -> Iterator[list[str]]:
        batch: list[str] = []
        tokens = 0  # an upper bound of the batch's tokens
        for text in texts:
            # A cl100k token is at least one byte of UTF-8, so the byte length bounds the count: the tokenizer
            # (about 130 ms to load, a query's whole cold-start cost of it) is needed only when that bound
            # could pass the request's limit.
            n = len(text.encode("utf-8"))
            if tokens + n > MAX_TOKENS_PER_REQUEST:
                n = self.count_tokens(text)
            if batch and (len(batch) >= self.batch_size or tokens + n > MAX_TOKENS_PER_REQUEST):
                yield batch
                batch, tokens = [], 0
            batch.append(text)
            tokens += n
        if batch:
            yield batch

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        import openai

        vectors: list[list[float]] = []
        extra = {} if NATIVE_DIMENSIONS.get(self.model) == self.dimension else {"dimensions": self.dimension}
        for batch in self._batches(texts):
            try:
                response = self._client.embeddings.create(model=self.model, input=batch, **extra)
            except openai.APIStatusError as exc:
                raise EmbeddingError(
                    f"OpenAI embeddings ({self.model}) failed with HTTP {exc.status_code} after retries: {exc.message}",
                    transient=exc.status_code not in (400, 413, 422),  # the input itself was refused
                ) from exc
            except openai.APIConnectionError as exc:
                raise EmbeddingError(f"OpenAI embeddings ({self.model}): cannot connect: {exc}") from exc
            vectors.extend(item.embedding for item in sorted(response.data, key=lambda item: item.index))
        return vectors
