"""Whether the database answers: what ``GET /health`` reports, bounded in time whatever the database does."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rag.config import Settings

GRACE_SECONDS = 0.5  # beyond the check's own bounds, before the caller stops waiting for it


def database_answers(settings: Settings, timeout_seconds: float) -> bool:
    """A pooled connection within ``timeout_seconds`` that runs ``SELECT 1`` within them too.

    The check runs in a thread the caller waits for at most a little longer: a server that accepted a connection
    and then stopped answering would hold a client-side read forever (a statement timeout is the server's).
    """
    answered: list[bool] = []
    check = threading.Thread(target=lambda: answered.append(_select_one(settings, timeout_seconds)), daemon=True)
    check.start()
    check.join(timeout_seconds + GRACE_SECONDS)
    return answered == [True]


def _select_one(settings: Settings, timeout_seconds: float) -> bool:
    import psycopg

    from rag.store.connection import get_pool

    try:
        with get_pool(settings).connection(timeout=timeout_seconds) as conn, conn.transaction():
            conn.execute(f"SET LOCAL statement_timeout = {max(1, int(timeout_seconds * 1000))}")
            conn.execute("SELECT 1")
    except psycopg.Error:  # PoolTimeout (down, unreachable, refusing) included
        return False
    return True
