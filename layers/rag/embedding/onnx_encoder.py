"""A sentence-transformers model run by ONNX Runtime: no torch at run time.

Reproduces what sentence-transformers does for all-MiniLM-L6-v2 and all-mpnet-base-v2
(their ``modules.json``: Transformer, mean Pooling, Normalize): word pieces truncated at
the model's ``max_seq_length`` (special tokens included), the transformer's token
embeddings, their mean over the attention mask, then L2 normalization. Texts are sorted
by length before batching, as sentence-transformers does, so a batch pads little.

A quantized graph runs one text at a time: dynamic quantization scales each activation
tensor by the range of the whole batch (padding included), so in a batch a text's int8
vector would depend on its neighbours (cosine .983-.987 to the same text alone). One text
per run makes the vector a function of the text (a query equals the chunk of the same
words, a re-ingest gives the same rows) for about 12% more CPU time per chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


class OnnxEncoder:
    def __init__(
        self, model_bytes: bytes, tokenizer_path: str, max_sequence_tokens: int, threads: int, *, one_text_per_run: bool = False
    ):
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = onnxruntime.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
        self.input_names = {item.name for item in self.session.get_inputs()}
        self.tokenizer = tokenizer_for_model(tokenizer_path, max_sequence_tokens)
        self.one_text_per_run = one_text_per_run

    def encode(self, texts: Sequence[str], batch_size: int) -> list[list[float]]:
        if self.one_text_per_run:
            batch_size = 1
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        vectors: list[Any] = [None] * len(texts)
        for start in range(0, len(order), batch_size):
            indices = order[start : start + batch_size]
            for index, vector in zip(indices, self._batch([texts[i] for i in indices])):
                vectors[index] = vector
        return np.asarray(vectors, dtype=np.float32).tolist()  # type: ignore[no-any-return]

    def _batch(self, texts: list[str]) -> Any:
        encodings = self.tokenizer.encode_batch(texts)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feed = {"input_ids": np.array([e.ids for e in encodings], dtype=np.int64), "attention_mask": mask}
        if "token_type_ids" in self.input_names:
            feed["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
        (tokens,) = self.session.run(["last_hidden_state"], feed)
        return mean_pooled_unit_vectors(tokens, mask)


def tokenizer_for_model(tokenizer_path: str, max_sequence_tokens: int) -> Any:
    """The model's tokenizer, truncating as the model does and padding each batch to its longest text."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(tokenizer_path)
    shipped = tokenizer.padding or {}  # the shipped file pads to a fixed 128: keep its pad token only
    pad_token = shipped.get("pad_token", "[PAD]")
    pad_id = shipped.get("pad_id", tokenizer.token_to_id(pad_token) or 0)
    tokenizer.enable_padding(pad_id=pad_id, pad_token=pad_token)
    tokenizer.enable_truncation(max_length=max_sequence_tokens)
    return tokenizer


def mean_pooled_unit_vectors(tokens: Any, mask: Any) -> Any:
    """sentence-transformers' mean Pooling (padding excluded) followed by its Normalize module."""
    weights = mask[..., None].astype(np.float32)
    summed = (tokens * weights).sum(axis=1)
    pooled = summed / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return pooled / np.clip(norms, 1e-12, None)
