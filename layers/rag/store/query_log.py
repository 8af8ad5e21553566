"""What the query log says: volume and latency per mode, and queries that keep finding little."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psycopg


@dataclass
class QueryReport:
    total: int = 0
    by_mode: list[tuple[str, int, float, float]] = field(default_factory=list)  # mode, count, p50, p95 ms
    low: list[tuple[str, int, float]] = field(default_factory=list)  # query, times asked, best similarity


def query_report(conn: psycopg.Connection, *, days: int = 7, low_similarity: float = 0.35, limit: int = 20) -> QueryReport:
    report = QueryReport()
    since = {"days": days}
    report.by_mode = [
        tuple(row)
        for row in conn.execute(
            """SELECT mode, count(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms),
                      percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms)
               FROM query_log WHERE created_at > now() - make_interval(days => %(days)s) GROUP BY mode ORDER BY mode""",
            since,
        )
    ]
    report.total = sum(row[1] for row in report.by_mode)
    report.low = [
        tuple(row)
        for row in conn.execute(
            """SELECT lower(query), count(*), max(coalesce(top_similarity, 0))
               FROM query_log WHERE created_at > now() - make_interval(days => %(days)s) AND mode NOT IN ('keyword', 'ask')
               GROUP BY lower(query) HAVING max(coalesce(top_similarity, 0)) < %(low)s
               ORDER BY count(*) DESC, 3 LIMIT %(limit)s""",
            {**since, "low": low_similarity, "limit": limit},
        )
    ]
    return report
