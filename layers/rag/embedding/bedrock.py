"""Amazon Titan Text Embeddings V2 on Bedrock (``amazon.titan-embed-text-v2:0``).

Titan V2 takes one text per InvokeModel call, so calls overlap in a small thread pool.
Retries on throttling and 5xx are botocore's (standard mode).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from typing import TYPE_CHECKING, Any

from rag.embedding.tokens import count_cl100k
from rag.errors import EmbeddingError

if TYPE_CHECKING:
    from rag.config import Settings

TITAN_V2_DIMENSIONS = (256, 512, 1024)
PARALLEL_CALLS = 4


def titan_request(text: str, dimension: int) -> dict[str, Any]:
    """Titan V2's request body: the same in an InvokeModel call and in a batch job's ``modelInput``."""
    return {"inputText": text, "dimensions": dimension, "normalize": True}


def titan_vector(output: dict[str, Any]) -> list[float]:
    """The vector of Titan V2's response body (InvokeModel) or a batch job's ``modelOutput``."""
    embedding = output.get("embedding")
    if not isinstance(embedding, list) or not embedding:
        raise ValueError(f"a Titan response without an embedding (keys: {sorted(output)})")
    return [float(x) for x in embedding]


class BedrockEmbedder:
    # Titan's tokenizer is not public: cl100k_base approximates it, and the limit keeps a
    # margin below Titan V2's 8,192 tokens (and 50,000 characters).
    max_input_tokens = 7000

    def __init__(self, settings: Settings, client: Any = None):
        self.settings = settings
        self.model = settings.embedding.resolved_model
        self.dimension = settings.embedding.resolved_dimension
        if self.dimension not in TITAN_V2_DIMENSIONS:
            raise ValueError(f"Titan Text Embeddings V2 supports dimensions {TITAN_V2_DIMENSIONS}, not {self.dimension}")
        self.model_id = settings.embedding.model_id
        if client is not None:
            self.__dict__["_client"] = client

    @cached_property
    def _client(self) -> Any:
        import boto3
        from botocore.config import Config

        return boto3.client(
            "bedrock-runtime",
            region_name=self.settings.embedding.bedrock_region or self.settings.aws.region,
            config=Config(retries={"mode": "standard", "total_max_attempts": self.settings.embedding.max_retries + 1}),
        )

    def count_tokens(self, text: str) -> int:
        return count_cl100k(text)

    def _embed_one(self, text: str) -> list[float]:
        from botocore.exceptions import BotoCoreError, ClientError

        body = json.dumps(titan_request(text, self.dimension))
        try:
            response = self._client.invoke_model(
                modelId=self.model, body=body, contentType="application/json", accept="application/json"
            )
        except (ClientError, BotoCoreError) as exc:
            refused = isinstance(exc, ClientError) and exc.response.get("Error", {}).get("Code") == "ValidationException"
            raise EmbeddingError(f"Bedrock {self.model} failed after retries: {exc}", transient=not refused) from exc
        return titan_vector(json.loads(response["body"].read()))

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if len(texts) <= 1:
            return [self._embed_one(text) for text in texts]
        with ThreadPoolExecutor(max_workers=PARALLEL_CALLS) as pool:
            return list(pool.map(self._embed_one, texts))
