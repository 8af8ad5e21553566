"""Shared by the benchmarks: a throw-away database on DATABASE_URL's server or the embedded one."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

import psycopg
from psycopg.conninfo import make_conninfo

from rag.config import REPO_ROOT, Settings


@contextlib.contextmanager
def bench_database(keep: str | None = None) -> Iterator[str]:
    """A new database, dropped afterwards; or the database ``keep``, created if missing and kept."""
    settings = Settings()
    if settings.database_url:
        server, started = settings.database_url, False
    else:
        from rag_local import postgres

        pgdata = (REPO_ROOT / settings.local_dir / "pgdata").resolve()
        started = postgres.start(pgdata, settings.local_pg_port, settings.local_pg_shared_buffers)
        server = postgres.server_url(settings.local_pg_port)
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

            postgres.stop((REPO_ROOT / settings.local_dir / "pgdata").resolve())
