from __future__ import annotations

import io
import json

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from rag.config import Settings
from rag.embedding.bedrock import BedrockEmbedder
from rag.errors import EmbeddingError


def stubbed(dimension: int = 256):
    client = boto3.client("bedrock-runtime", region_name="us-east-1")
    settings = Settings(embedding_provider="bedrock", embedding_dimension=dimension)
    return BedrockEmbedder(settings, client=client), Stubber(client)


def body(payload: dict) -> StreamingBody:
    raw = json.dumps(payload).encode()
    return StreamingBody(io.BytesIO(raw), len(raw))


def test_invoke_model_request_and_response_on_the_titan_v2_wire_format():
    embedder, stub = stubbed(256)
    vector = [0.0625] * 256
    stub.add_response(
        "invoke_model",
        {"body": body({"embedding": vector, "inputTextTokenCount": 4}), "contentType": "application/json"},
        {
            "modelId": "amazon.titan-embed-text-v2:0",
            "body": json.dumps({"inputText": "the battery decision", "dimensions": 256, "normalize": True}),
            "contentType": "application/json",
            "accept": "application/json",
        },
    )
    with stub:
        assert embedder.embed(["the battery decision"]) == [vector]
    stub.assert_no_pending_responses()
    assert embedder.model_id == "bedrock/amazon.titan-embed-text-v2:0@256"  # shortened from 1,024: its own space


def test_throttling_surfaces_as_embedding_error():
    # Stubber answers before botocore's retry handler runs, so this shows the final error only.
    embedder, stub = stubbed()
    stub.add_client_error("invoke_model", service_error_code="ThrottlingException", http_status_code=429)
    with stub, pytest.raises(EmbeddingError, match="ThrottlingException"):
        embedder.embed(["x"])


def test_unsupported_dimension_is_refused():
    with pytest.raises(ValueError, match=r"\(256, 512, 1024\)"):
        BedrockEmbedder(Settings(embedding_provider="bedrock", embedding_dimension=384))
