"""How big a search's scope is, which decides between an exact sort and the HNSW index.

Counted from two small tables (never the chunks) and remembered per scope in the warm
process, so that a search does not pay a round trip for it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg

    from rag.search.engine import SearchScope


@dataclass(frozen=True)
class ScopeSize:
    """Upper bounds of the chunks a scope can reach and of all the tenant's chunks."""

    rows: int
    tenant_rows: int

    def exact_is_faster(self, max_rows: int, max_share: float) -> bool:
        """Whether an exact sort beats the HNSW index (measured in bench/query_latency.py).

        An exact sort costs about 1 microsecond per row of the scope; the iterative HNSW
        scan visits about 1/share rows per row it keeps. So: a scope small in rows *and*
        a small share of the tenant (1% of a million chunks: exact 14 ms, HNSW 100-400 ms;
        10% of 100,000: exact 14 ms, HNSW 7 ms).
        """
        return self.rows <= max_rows and self.rows <= max_share * self.tenant_rows


def scope_size(conn: psycopg.Connection, scope: SearchScope) -> ScopeSize:
    """The scope's size from two small tables (never the chunks), in one round trip.

    Documents named: their chunk counts. Otherwise the BM25 statistics of the tenant's
    projects (``keyword_stats``: chunks with at least one term). Date, speaker and
    source filters only narrow further.
    """
    row = conn.execute(
        """SELECT CASE WHEN cardinality(%(documents)s::uuid[]) > 0
                    THEN (SELECT sum(chunk_count) FROM documents WHERE tenant_id = %(tenant)s AND id = ANY(%(documents)s::uuid[]))
                    ELSE (SELECT sum(chunk_count) FROM keyword_stats
                          WHERE tenant_id = %(tenant)s AND (cardinality(%(projects)s::text[]) = 0 OR project_id = ANY(%(projects)s::text[])))
                  END,
                  (SELECT sum(chunk_count) FROM keyword_stats WHERE tenant_id = %(tenant)s)""",
        {"tenant": scope.tenant_id, "documents": list(scope.document_ids), "projects": list(scope.project_ids)},
    ).fetchone()
    return ScopeSize(int(row[0] or 0), int(row[1] or 0)) if row else ScopeSize(0, 0)


class ScopeSizeCache:
    """``scope_size`` remembered per scope for ``ttl_seconds`` in the warm process: no round trip per search.

    The size only chooses between an exact sort and the HNSW index, and a scope grows
    slowly (an ingest adds one meeting's chunks), so a minute-old count chooses as well.
    """

    def __init__(self, ttl_seconds: float = 60.0, max_entries: int = 1024):
        self.ttl_seconds, self.max_entries = ttl_seconds, max_entries
        self._sizes: dict[tuple[Any, ...], tuple[float, ScopeSize]] = {}
        self._lock = threading.Lock()

    def size(self, conn: psycopg.Connection, scope: SearchScope) -> ScopeSize:
        key = (scope.tenant_id, scope.project_ids, scope.document_ids)
        now = time.monotonic()
        with self._lock:
            cached = self._sizes.get(key)
        if cached is not None and now - cached[0] < self.ttl_seconds:
            return cached[1]
        found = scope_size(conn, scope)
        with self._lock:
            if len(self._sizes) >= self.max_entries:
                self._sizes.clear()  # a burst of one-off scopes: start again rather than track ages
            self._sizes[key] = (now, found)
        return found
