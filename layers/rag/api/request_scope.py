"""What one API request works with: its caller's tenant, and its database connections borrowed on first use."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

import psycopg

from rag.api.identity import tenant_of
from rag.config import get_settings
from rag.store.replica import Connections, WriterSource

T = TypeVar("T")


def request_tenant(event: dict[str, Any]) -> str:
    """The verified caller's tenant (``rag.api.identity``; raises ``Unauthenticated``)."""
    settings = get_settings()
    return tenant_of(event, claim=settings.api.tenant_claim, iam_tenants=settings.api.iam_tenants)


# Per thread (and per task): requests handled side by side never share a connection.
_request_connections: ContextVar[Connections] = ContextVar("rag_request_connections")


def request_conn() -> psycopg.Connection:
    """The writer: what the request writes, and reads a client must see right after its own writes."""
    return _request_connections.get().writer()


def request_read(work: Callable[[psycopg.Connection, WriterSource | None], T]) -> T:
    """``work`` on the reader when one is configured and healthy, else on the writer (``rag.store.replica``)."""
    return _request_connections.get().read(work)


@contextmanager
def request_scope() -> Iterator[None]:
    """One request: its connections are borrowed on first use and given back when the request ends."""
    token = _request_connections.set(Connections(get_settings()))
    try:
        yield
    finally:
        _request_connections.get().release()
        _request_connections.reset(token)
