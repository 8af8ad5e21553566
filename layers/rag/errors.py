"""Typed errors whose messages say what went wrong and with which input."""

from __future__ import annotations

from rag.storable_text import describe_unstorable, first_unstorable


class RagError(Exception):
    """Base class of this library's errors."""


class ParseError(RagError):
    """The file cannot be turned into text: it is recorded as a failed document, never retried."""


class InvalidObjectKey(RagError):
    """The S3 key follows neither ``tenants/<tenant_id>/projects/<project_id>/.../<file>`` nor ``projects/<project_id>/.../<file>``."""


class EmbeddingError(RagError):
    """The embedding provider failed after its retries.

    ``transient`` is False when the provider refused the input itself (HTTP 400/422, Bedrock's
    ValidationException): the same text fails the same way, so the document is ``failed``.
    """

    def __init__(self, message: str, *, transient: bool = True):
        super().__init__(message)
        self.transient = transient


class TransientError(RagError):
    """Something outside the input failed (database, S3, a provider): the same work can succeed later.

    The backfill's stage Lambdas raise it under this name: the state machine's Retry matches on it.
    """


class LLMOutputError(RagError):
    """The chat model's answer does not fit what was asked for (refusal, truncated, wrong structure)."""


class ContinueLater(TransientError):
    """A file too large to embed in one invocation: its progress is saved, a new invocation goes on."""


# SQLSTATE classes of errors that say nothing about the input: connection lost (08), deadlock or
# serialization failure (40), out of resources (53), a lock not available (55), shutdown or a
# statement timeout (57), system errors (58, XX); and a schema or privilege out of step with the
# code (42), which a deploy fixes and a redrive then completes.
_TRANSIENT_SQLSTATE_CLASSES = ("08", "40", "42", "53", "55", "57", "58", "XX")
_TRANSIENT_SQLSTATES = ("25P03",)  # idle_in_transaction_session_timeout ended the session


def is_transient(exc: BaseException) -> bool:
    """Whether retrying the same work later can succeed.

    Transient: the database unreachable or restarting (a pool timeout included), timeouts,
    deadlocks, S3 or a provider throttling or failing. Everything else, above all a value
    PostgreSQL refuses (bad encoding, NUL, a number out of range: SQLSTATE classes 22, 23, 54)
    or a file the parser cannot read, fails the same way every time and is recorded as a
    ``failed`` document instead.
    """
    if isinstance(exc, EmbeddingError):
        return exc.transient
    if isinstance(exc, TransientError):
        return True
    import psycopg

    if isinstance(exc, psycopg.Error):
        sqlstate = exc.sqlstate
        if sqlstate is None:  # raised by the client: a lost connection, or a value it cannot send
            return isinstance(exc, psycopg.OperationalError)
        return sqlstate[:2] in _TRANSIENT_SQLSTATE_CLASSES or sqlstate in _TRANSIENT_SQLSTATES
    try:
        from botocore.exceptions import BotoCoreError, ClientError
    except ImportError:  # pragma: no cover - botocore is in every runtime this runs in
        return isinstance(exc, (ConnectionError, TimeoutError))
    # An S3 or AWS error is about the environment (throttling, an outage, a missing permission), not
    # the file: retried, and parked in the DLQ if it persists, to be redriven once fixed.
    return isinstance(exc, (ClientError, BotoCoreError, ConnectionError, TimeoutError))


def describe_failure(exc: BaseException) -> str:
    """A readable one-line error for ``documents.error``: what failed, not a traceback."""
    if isinstance(exc, ParseError):
        return str(exc)
    import psycopg

    if isinstance(exc, psycopg.Error):
        detail = exc.diag.message_primary or str(exc)
        return f"the database refused a value of this file ({exc.sqlstate or type(exc).__name__}): {detail}"
    if isinstance(exc, UnicodeEncodeError) and (found := first_unstorable(exc.object[exc.start : exc.end])):
        return f"the database refused a value of this file: it holds {describe_unstorable(found[0])}"
    return f"unexpected {type(exc).__name__} while processing this file: {exc}"
