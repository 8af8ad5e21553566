"""Moved to ``rag.llm`` (shared with the reranker and /v1/ask); these names stay importable from here."""

from rag.llm import chat_client, numbered_units, structured_completion

__all__ = ["chat_client", "numbered_units", "structured_completion"]
