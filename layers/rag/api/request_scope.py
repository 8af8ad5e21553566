"""What one API request works with: its caller's tenant, and its database connection borrowed from the pool on first use."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import psycopg

from rag.api.identity import tenant_of
from rag.config import get_settings


def request_tenant(event: dict[str, Any]) -> str:
    """The verified caller's tenant (``rag.api.identity``; raises ``Unauthenticated``)."""
    settings = get_settings()
    return tenant_of(event, claim=settings.tenant_claim, iam_tenants=settings.iam_tenants)


class RequestConnection:
    """The connection of one request: borrowed from the pool on first use, returned when the request ends."""

    def __init__(self) -> None:
        self._borrowed: Any = None
        self.conn: psycopg.Connection | None = None

    def get(self) -> psycopg.Connection:
        if self.conn is None:
            from rag.store.connection import connection

            self._borrowed = connection(get_settings())
            self.conn = self._borrowed.__enter__()
        return self.conn

    def release(self) -> None:
        if self._borrowed is not None:
            self._borrowed.__exit__(None, None, None)
        self._borrowed = self.conn = None


# Per thread (and per task): requests handled side by side never share a connection.
_request_connection: ContextVar[RequestConnection] = ContextVar("rag_request_connection")


def request_conn() -> psycopg.Connection:
    return _request_connection.get().get()


@contextmanager
def request_scope() -> Iterator[None]:
    """One request: ``request_conn`` borrows its own connection, given back when the request ends."""
    token = _request_connection.set(RequestConnection())
    try:
        yield
    finally:
        _request_connection.get().release()
        _request_connection.reset(token)
