"""Typed errors whose messages say what went wrong and with which input."""

from __future__ import annotations


class RagError(Exception):
    """Base class of this library's errors."""


class ParseError(RagError):
    """The file cannot be turned into text: it is recorded as a failed document, never retried."""


class InvalidObjectKey(RagError):
    """The S3 key does not follow ``projects/<project_id>/.../<file>``."""


class EmbeddingError(RagError):
    """The embedding provider failed after its retries (transient: the message is retried)."""
