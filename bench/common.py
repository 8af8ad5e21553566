"""Shared by the benchmarks: a throw-away database on DATABASE_URL's server or the embedded one."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

import psycopg
from psycopg.conninfo import make_conninfo

from rag.config import REPO_ROOT, Settings

# The query benchmarks' filters: projects p1 and p10 hold 1% and 10% of the rows, no filter is 100%.
FILTERS = (("1%", ["p1"]), ("10%", ["p10"]), ("100%", []))


@contextlib.contextmanager
def bench_database(keep: str | None = None) -> Iterator[str]:
    """A new database, dropped afterwards; or the database ``keep``, created if missing and kept."""
    settings = Settings()
    if settings.database.url:
        server, started = settings.database.url, False
    else:
        from rag_local import postgres

        pgdata = (REPO_ROOT / settings.local.dir / "pgdata").resolve()
        started = postgres.start(pgdata, settings.local.pg_port, settings.local.pg_shared_buffers)
        server = postgres.server_url(settings.local.pg_port)
    name = keep or f"rag_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server, autocommit=True) as admin:
        if admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is None:
            admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield make_conninfo(server, dbname=name)
    finally:
        if not keep:
            with psycopg.connect(server, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if started:
            from rag_local import postgres

            postgres.stop((REPO_ROOT / settings.local.dir / "pgdata").resolve())


def exact_top10(conn, queries) -> dict[str, list[set[int]]]:
    """The true top 10 of each query under each of ``FILTERS`` in ``bare_items``, by sequential scans.

    Kept in ``bench_exact`` by filter, query vector and row count: at a million rows the scans take
    minutes, and a later run on the same kept database reuses them.
    """
    import hashlib

    conn.execute(
        "CREATE TABLE IF NOT EXISTS bench_exact (filter text, query_sha1 text, rows bigint, ids bigint[], PRIMARY KEY (filter, query_sha1))"
    )
    rows = conn.execute("SELECT count(*) FROM bare_items").fetchone()[0]
    keys = [hashlib.sha1(q.tobytes()).hexdigest() for q in queries]
    exact: dict[str, list[set[int]]] = {}
    for label, projects in FILTERS:
        kept = dict(
            conn.execute("SELECT query_sha1, ids FROM bench_exact WHERE filter = %s AND rows = %s", (label, rows)).fetchall()
        )
        where = "WHERE project_id = ANY(%(projects)s)" if projects else ""
        for key, q in zip(keys, queries):
            if key not in kept:
                with conn.transaction():
                    conn.execute(
                        "SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL statement_timeout = 0"
                    )
                    found = conn.execute(
                        f"SELECT id FROM bare_items {where} ORDER BY embedding <=> %(q)s LIMIT 10", {"q": q, "projects": projects}
                    )
                    kept[key] = [r[0] for r in found]
                    conn.execute("INSERT INTO bench_exact VALUES (%s, %s, %s, %s) ON CONFLICT (filter, query_sha1) DO UPDATE"
                                 " SET rows = excluded.rows, ids = excluded.ids", (label, key, rows, kept[key]))  # fmt: skip
        exact[label] = [set(kept[key]) for key in keys]
        print(f"exact top 10 at {label}: ready", flush=True)
    return exact


# One short sentence as every synthetic chunk's text: the vectors are what a load benchmark measures.
SYNTHETIC_TEXT = "Maya: we agreed to ship the rechargeable battery on both models and keep the backlight for premium."


def synthetic_loads(vectors, doc_chunks: int = 1000, project: str = "p") -> list:
    """Documents of ``doc_chunks`` chunks each holding ``vectors`` in order, for ``rag.store.bulk.bulk_load``."""
    from rag.parsing.model import Chunk, ParsedDocument
    from rag.store import documents as repo
    from rag.store.bulk import DocumentLoad

    text, loads = SYNTHETIC_TEXT, []
    for start in range(0, len(vectors), doc_chunks):
        count = min(doc_chunks, len(vectors) - start)
        chunks = [Chunk(index=i, text=text, start_char=0, end_char=len(text), token_count=20) for i in range(count)]
        key = f"projects/{project}/{start}.txt"
        source = repo.SourceObject("bench", project, "bench", key, content_sha256=str(start))
        parsed = ParsedDocument(kind="document", format="text", text=text)
        loads.append(DocumentLoad(source, repo.DocumentFields(), parsed, chunks, vectors[start : start + count]))
    return loads
