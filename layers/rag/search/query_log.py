"""The query log, written without costing a search its own transaction.

Each search's row is held in the process and travels, with the rows waiting beside it, in a
later search's transaction (same pipeline: no extra round trip, no extra commit), once
``batch_rows`` rows wait or nothing has been written for ``flush_seconds``. Sending a row with every
search cost it 0.3 ms (15% of a semantic search at 100,000 chunks, bench/query_latency.py):
the INSERT's parameters and its statement, for one row. So that sparse traffic does not
leave rows waiting, a row is written on its own when nothing has been written for
``flush_seconds``: under load, one batch every few seconds or every ``batch_rows`` searches;
at one search a minute, every row at once. What a crash or a reclaimed Lambda can lose is
the rows of the last ``flush_seconds``; a log row lost is acceptable, a slower search is not.
Commits of log rows never wait for the WAL flush (``synchronous_commit`` off).
"""

from __future__ import annotations

import json
import threading
import time
from typing import TYPE_CHECKING, Any

from rag.store.connection import pipelined_transaction

if TYPE_CHECKING:
    import psycopg

# One statement for any number of rows; each row's types travel as one comma-joined text
# (unnest cannot take a text[][]) and are split again here.
INSERT_ROWS = """
    INSERT INTO query_log (tenant_id, query, mode, types, filters, result_count, top_similarity, mean_similarity,
                           latency_ms)
    SELECT tenant, query, mode, string_to_array(types, ','), filters, result_count, top_similarity, mean_similarity,
           latency_ms
    FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::jsonb[], %s::int[], %s::float8[], %s::float8[],
                %s::float8[]) AS r(tenant, query, mode, types, filters, result_count, top_similarity, mean_similarity,
                                   latency_ms)"""


class PendingQueryLog:
    """Rows not yet written, and when the process last wrote any."""

    def __init__(self, batch_rows: int = 32) -> None:
        self.batch_rows = batch_rows
        self._rows: list[tuple[Any, ...]] = []
        self._last_write = 0.0
        self._lock = threading.Lock()  # the local API and worker share one process

    def add(self, tenant_id: str, query: str, mode: str, types: list[str], filters: dict[str, Any],
            result_count: int, top_similarity: float | None, mean_similarity: float | None, latency_ms: float) -> None:  # fmt: skip
        with self._lock:
            self._rows.append(
                (
                    tenant_id,
                    query,
                    mode,
                    ",".join(types),
                    json.dumps(filters),
                    result_count,
                    top_similarity,
                    mean_similarity,
                    latency_ms,
                )  # fmt: skip
            )

    def take(self) -> list[tuple[Any, ...]]:
        with self._lock:
            rows, self._rows = self._rows, []
            if rows:
                self._last_write = time.monotonic()
            return rows

    def due(self, flush_seconds: float) -> bool:
        with self._lock:
            return bool(self._rows) and time.monotonic() - self._last_write >= flush_seconds

    def batch_ready(self, flush_seconds: float) -> bool:
        """Whether the waiting rows are worth a statement: a full batch, or nothing written for ``flush_seconds``."""
        with self._lock:
            waited = time.monotonic() - self._last_write >= flush_seconds
            return len(self._rows) >= self.batch_rows or (bool(self._rows) and waited)

    def write_in_transaction(self, conn: psycopg.Connection, flush_seconds: float = 0.0) -> None:
        """Send the pending rows inside the caller's transaction (and pipeline) if ``batch_ready``: nothing to wait for."""
        if not self.batch_ready(flush_seconds):
            return
        if rows := self.take():
            conn.execute("SELECT set_config('synchronous_commit', 'off', true)")
            conn.execute(INSERT_ROWS, [list(column) for column in zip(*rows)])

    def flush(self, conn: psycopg.Connection) -> None:
        """Write the pending rows in a transaction of their own."""
        with pipelined_transaction(conn):
            self.write_in_transaction(conn)
