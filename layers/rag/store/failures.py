"""What to tell a caller whose request a failing database ended, as one mapping: the API sends it as an HTTP error, the MCP tools as a tool error.

psycopg_pool's ``PoolTimeout`` (no connection in time: the database down or every connection busy) and
psycopg's ``QueryCanceled`` (``statement_timeout``) are both ``psycopg.OperationalError``s, as is a
connection lost mid-request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psycopg


@dataclass(frozen=True)
class DatabaseFailure:
    status: int
    code: str
    message: str  # says what the caller can do


def database_failure(exc: psycopg.OperationalError) -> DatabaseFailure:
    """What to tell the caller when ``exc`` ended its request."""
    import psycopg
    from psycopg_pool import PoolTimeout

    if isinstance(exc, psycopg.errors.QueryCanceled):
        return DatabaseFailure(504, "timeout", "the search took longer than its time limit; narrow the query or its scope")
    if isinstance(exc, PoolTimeout):
        # The pool gives up the same way whether the server is down or every connection is busy.
        message = "the database is unreachable or busy: no connection came free in time; retry in a few seconds"
        return DatabaseFailure(503, "database_unavailable", message)
    return DatabaseFailure(503, "database_unavailable", "the database cannot be reached; retry in a few seconds")
