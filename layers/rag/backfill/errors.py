"""Errors of the backfill stages: transient ones retry the batch, the others are the document's."""

from __future__ import annotations

from rag.errors import RagError


class TransientError(RagError):
    """Worth retrying the whole batch later (database, LLM or embedding API unavailable).

    The stage Lambdas raise it under this name: the state machine's Retry matches on it.
    """


class DocumentError(RagError):
    """This document cannot go through the stage as it is (recorded in ``documents.backfill_error``)."""


class LLMOutputError(DocumentError):
    """The LLM's answer does not fit the expected structure (refusal, truncated, out-of-range turns)."""
