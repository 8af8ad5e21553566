"""Errors of the backfill stages: transient ones retry the batch, the others are the document's."""

from __future__ import annotations

from rag.errors import LLMOutputError, RagError, TransientError

# The stage Lambdas raise TransientError under this name: the state machine's Retry matches on it.
__all__ = ["DocumentError", "LLMOutputError", "TransientError"]


class DocumentError(RagError):
    """This document cannot go through the stage as it is (recorded in ``documents.backfill_error``)."""
