from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest


@pytest.mark.slow
def test_local_model_embeds_offline_with_meaningful_similarity(local_embedder):
    vectors = np.array(
        local_embedder.embed(
            ["We decided to use a rechargeable battery.", "The team chose a battery you can recharge.", "Lunch is at noon."]
        )
    )
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    similarity = vectors @ vectors.T
    assert similarity[0, 1] > 0.6 > similarity[0, 2]
    assert local_embedder.embed([]) == []


def test_token_counts_and_limit_match_the_model():
    from rag.config import Settings
    from rag.embedding.local import LocalEmbedder

    embedder = LocalEmbedder(Settings())
    assert embedder.count_tokens("hello world") == 2
    assert embedder.count_tokens(" ".join(["battery"] * 1000)) == 1000
    assert embedder.max_input_tokens == 254 and embedder.model_id == "local/all-MiniLM-L6-v2"
    assert embedder.runtime == "onnx"  # the default: torch's vectors, under torch's model id


def test_importing_the_library_loads_no_heavy_sdk():
    code = "import sys, rag.embedding, rag.ingest, rag.events; print(sorted(m for m in ('torch', 'openai', 'sentence_transformers', 'onnxruntime') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
