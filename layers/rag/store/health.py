"""Whether the database answers: what ``GET /health`` reports, bounded in time whatever the database does."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rag.config import Settings


def database_answers(settings: Settings, timeout_seconds: float) -> bool:
    """A pooled connection within ``timeout_seconds`` that runs ``SELECT 1`` within them too."""
    import psycopg

    from rag.store.connection import get_pool

    try:
        with get_pool(settings).connection(timeout=timeout_seconds) as conn, conn.transaction():
            conn.execute(f"SET LOCAL statement_timeout = {max(1, int(timeout_seconds * 1000))}")
            conn.execute("SELECT 1")
    except psycopg.Error:  # PoolTimeout (down, unreachable, refusing) included
        return False
    return True
