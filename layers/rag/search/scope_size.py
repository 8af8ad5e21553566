"""How big a search's scope is, which decides between an exact sort and the HNSW index, and how wide the HNSW search.

Counted from two small tables and the catalog (never the chunks) and remembered per
scope in the warm process, so that a search does not pay a round trip for it.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg

    from rag.search.engine import SearchScope


@dataclass(frozen=True)
class ScopeSize:
    """Upper bounds of the chunks a scope can reach and of all the tenant's chunks; the rows of the vector index."""

    rows: int
    tenant_rows: int
    index_rows: int = 0  # every tenant's rows of the model: the HNSW graph a search walks (0: unknown)

    def exact_is_faster(self, max_rows: int, max_share: float) -> bool:
        """Whether an exact sort beats the HNSW index (measured in bench/query_latency.py).

        An exact sort costs about 1 microsecond per row of the scope; the iterative HNSW
        scan visits about 1/share rows per row it keeps. So: a scope small in rows *and*
        a small share of the tenant (1% of a million chunks: exact 14 ms, HNSW 100-400 ms;
        10% of 100,000: exact 14 ms, HNSW 7 ms).
        """
        return self.rows <= max_rows and self.rows <= max_share * self.tenant_rows

    def ef_search(self, base: int, base_rows: int, most: int) -> int:
        """``hnsw.ef_search`` for this graph: ``base`` up to ``base_rows`` rows, with the square root of the growth beyond.

        HNSW's recall at a fixed ef_search falls as its graph grows. Measured with
        bench/index_variants.py on clustered 384-d vectors (graphs built with ef_construction 128):
        ef_search 100 keeps recall@10 at .99 over 100,000 rows; a million rows need about
        300 for .97 (200: .96, 400: .98), where the search time is still flat. A filtered search
        walks the same graph (the iterative scan visits more of it), so the graph's size, every
        tenant's rows of the model, counts, not the scope's. At most ``most``.
        """
        graph = max(self.index_rows, self.tenant_rows)
        return max(base, min(most, round(base * math.sqrt(graph / max(1, base_rows)))))


def scope_size(conn: psycopg.Connection, scope: SearchScope, index_name: str | None = None) -> ScopeSize:
    """The scope's size from two small tables and the catalog (never the chunks), in one round trip.

    Documents named: their chunk counts. Otherwise the BM25 statistics of the tenant's
    projects (``keyword_stats``: chunks with at least one term). Date, speaker and
    source filters only narrow further. ``index_name``: the model's vector index, whose
    row estimate (kept by ANALYZE and VACUUM) sizes the graph.
    """
    row = conn.execute(
        """SELECT CASE WHEN cardinality(%(documents)s::uuid[]) > 0
                    THEN (SELECT sum(chunk_count) FROM documents WHERE tenant_id = %(tenant)s AND id = ANY(%(documents)s::uuid[]))
                    ELSE (SELECT sum(chunk_count) FROM keyword_stats
                          WHERE tenant_id = %(tenant)s AND (cardinality(%(projects)s::text[]) = 0 OR project_id = ANY(%(projects)s::text[])))
                  END,
                  (SELECT sum(chunk_count) FROM keyword_stats WHERE tenant_id = %(tenant)s),
                  (SELECT greatest(reltuples, 0) FROM pg_class
                   WHERE relname = %(index)s AND relnamespace = current_schema()::regnamespace)""",
        {"tenant": scope.tenant_id, "documents": list(scope.document_ids), "projects": list(scope.project_ids),
         "index": index_name},
    ).fetchone()  # fmt: skip
    return ScopeSize(int(row[0] or 0), int(row[1] or 0), int(row[2] or 0)) if row else ScopeSize(0, 0)


class ScopeSizeCache:
    """``scope_size`` remembered per scope (for the ``ttl_seconds`` a lookup allows) in the warm process: no round trip per search.

    The size only chooses between an exact sort and the HNSW index, and a scope grows
    slowly (an ingest adds one meeting's chunks), so a minute-old count chooses as well.
    """

    def __init__(self, max_entries: int = 1024):
        self.max_entries = max_entries
        self._sizes: dict[tuple[Any, ...], tuple[float, ScopeSize]] = {}
        self._lock = threading.Lock()

    def size(
        self, conn: psycopg.Connection, scope: SearchScope, index_name: str | None = None, *, ttl_seconds: float = 60.0
    ) -> ScopeSize:
        key = (scope.tenant_id, scope.project_ids, scope.document_ids, index_name)
        now = time.monotonic()
        with self._lock:
            cached = self._sizes.get(key)
        if cached is not None and now - cached[0] < ttl_seconds:
            return cached[1]
        found = scope_size(conn, scope, index_name)
        with self._lock:
            if len(self._sizes) >= self.max_entries:
                self._sizes.clear()  # a burst of one-off scopes: start again rather than track ages
            self._sizes[key] = (now, found)
        return found
