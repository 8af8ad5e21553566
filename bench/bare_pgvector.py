"""The bare pgvector query the benchmarks measure beside ours: psycopg and numpy only, so that
bench/peer_stores.py can run it under the peers' own venv too."""

from __future__ import annotations


def bare_search(conn, projects: list[str], query, ef_search: int) -> list[int]:
    """The plain pgvector query on ``bare_items`` (iterative scan, prepared after a few runs as psycopg does by default)."""
    with conn.transaction():
        conn.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', %s, true)",
                     (str(ef_search),))  # fmt: skip
        if projects:
            rows = conn.execute(
                "SELECT id FROM bare_items WHERE project_id = ANY(%s) ORDER BY embedding <=> %s LIMIT 10", (projects, query)
            )
        else:
            rows = conn.execute("SELECT id FROM bare_items ORDER BY embedding <=> %s LIMIT 10", (query,))
        return [row[0] for row in rows]
