"""A re-embedding step that cannot succeed as asked (the state machine records the run as failed)."""

from __future__ import annotations

from rag.errors import RagError


class ReembedError(RagError):
    """A step asked of a run that does not exist or is not running, or an input out of contract."""
