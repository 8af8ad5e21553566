"""Numbered SQL migrations from ``sql/``, applied in order and recorded in a table.

Re-running is a no-op. An advisory lock keeps concurrent migrators (several
Lambdas, a deploy and a developer) from applying the same file twice. An applied file
must never change (databases that already ran it would silently differ from new ones):
``migrate`` compares each recorded checksum with the file's and refuses to run on a mismatch.

Before anything else the server's pgvector must be at least ``MIN_VECTOR_VERSION`` (iterative index scans).
Each configured model gets a partial HNSW index per embedded table: ``migrate`` builds it in its transaction
while the table holds at most ``index_build_max_rows`` of that model's rows; a larger build is left to
``ensure_embedding_indexes_concurrently`` (``CREATE INDEX CONCURRENTLY``, outside any transaction, no time
limit), which ``rag migrate`` runs next and which the deployed migrator runs on a ``build-indexes`` invocation.
Until then searches of that model scan without the index (correct, slower).
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rag.store.schema import EMBEDDED_TABLES, embedding_index_name, embedding_index_sql

if TYPE_CHECKING:
    import psycopg
    from psycopg import sql

    from rag.config import Settings

MIGRATION_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_LOCK_ID = 7_320_114_001  # any constant shared by every migrator of this schema
_INDEX_LOCK_ID = 7_320_114_002  # concurrent index builders (outside the migrators' lock: a build may take hours)

# pgvector 0.8.0 brought iterative index scans (hnsw.iterative_scan), which filtered search relies on.
MIN_VECTOR_VERSION = "0.8.0"
# migrate builds a missing index in its transaction up to this many rows of the model (Settings.database.index_build_max_rows).
INDEX_BUILD_MAX_ROWS = 10_000

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Migration:
    version: str
    name: str
    path: Path

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.path.read_bytes()).hexdigest()


def discover(migrations_dir: Path) -> list[Migration]:
    """The migration files of ``migrations_dir`` in version order."""
    if not migrations_dir.is_dir():
        raise FileNotFoundError(f"migrations folder {migrations_dir} does not exist (set RAG_MIGRATIONS_DIR)")
    found = []
    for path in sorted(migrations_dir.glob("*.sql")):
        match = MIGRATION_FILE.match(path.name)
        if not match:
            raise ValueError(f"{path.name}: migration files are named NNNN_snake_case_name.sql")
        found.append(Migration(version=match[1], name=match[2], path=path))
    return found


class MigrationChecksumError(RuntimeError):
    """An already-applied migration file was edited: its checksum differs from the one recorded."""


def check_checksums(migrations: Sequence[Migration], recorded: dict[str, str]) -> None:
    """Refuse applied migrations whose file no longer matches the checksum recorded when they ran."""
    edited = [m for m in migrations if m.version in recorded and recorded[m.version] != m.checksum]
    if not edited:
        return
    details = "; ".join(
        f"{m.path.name} ({m.path}): recorded checksum {recorded[m.version]}, current checksum {m.checksum}" for m in edited
    )
    raise MigrationChecksumError(
        f"applied migration file(s) changed since they ran: {details}. Databases that already applied them would"
        " never see the edit: restore the file(s) to what was applied and put the change in a new migration"
        " (the next NNNN_name.sql) instead"
    )


class VectorExtensionError(RuntimeError):
    """The server's pgvector is missing or older than MIN_VECTOR_VERSION."""


def _version_key(version: str) -> tuple[int, ...]:
    numbers = re.findall(r"\d+", version.split("-")[0])
    if not numbers:
        raise VectorExtensionError(f"cannot read pgvector version {version!r}")
    return tuple(int(n) for n in numbers[:3])


def check_vector_version(version: str | None, *, installed: bool, minimum: str = MIN_VECTOR_VERSION) -> str:
    """Refuse a pgvector older than ``minimum``; ``installed``: the extension exists (else it is the one on offer)."""
    if version is None:
        raise VectorExtensionError(
            f"pgvector is not available on this server (no 'vector' extension): rag needs pgvector >= {minimum}"
        )
    if _version_key(version) < _version_key(minimum):
        fix = (
            "run ALTER EXTENSION vector UPDATE (after a minor engine upgrade if the server offers nothing newer)"
            if installed
            else f"upgrade the server to an engine (minor) version whose pgvector is >= {minimum}"
        )
        where = "installed" if installed else "the version this server would install"
        raise VectorExtensionError(
            f"pgvector {version} is {where}; rag needs pgvector >= {minimum} (iterative index scans,"
            f" hnsw.iterative_scan, which filtered vector search relies on): {fix}"
        )
    return version


def vector_extension_version(conn: psycopg.Connection) -> tuple[str | None, bool]:
    """(version, installed): the installed pgvector, else the one CREATE EXTENSION would install, else None."""
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    if row:
        return row[0], True
    row = conn.execute("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'").fetchone()
    return (row[0] if row else None), False


def check_vector_extension(conn: psycopg.Connection, minimum: str | None = None) -> str:
    """The server's pgvector version, or VectorExtensionError naming ``minimum`` (default MIN_VECTOR_VERSION)."""
    version, installed = vector_extension_version(conn)
    return check_vector_version(version, installed=installed, minimum=minimum or MIN_VECTOR_VERSION)


def migrate(
    conn: psycopg.Connection,
    migrations_dir: Path,
    embedding_models: dict[str, int],
    *,
    index_build_max_rows: int = INDEX_BUILD_MAX_ROWS,
) -> list[str]:
    """Apply pending migrations, then make sure every configured model has its vector index.

    ``embedding_models`` maps a model id to its dimension. Returns the versions applied; raises
    MigrationChecksumError, before applying anything, when an applied file was edited. A missing index over more
    than ``index_build_max_rows`` rows of its model is not built here (one transaction, a deploy's time limit): it is
    logged and left to ``ensure_embedding_indexes_concurrently``.
    """
    applied: list[str] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_ID,))
        check_vector_extension(conn)
        conn.execute("SET LOCAL statement_timeout = 0")  # index builds take what they take
        conn.execute(
            """CREATE TABLE IF NOT EXISTS schema_migrations (
                   version text PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,
                   applied_at timestamptz NOT NULL DEFAULT now())"""
        )
        done = {row[0]: row[1] for row in conn.execute("SELECT version, checksum FROM schema_migrations")}
        migrations = discover(migrations_dir)
        check_checksums(migrations, done)
        for migration in migrations:
            if migration.version in done:
                continue
            conn.execute(migration.path.read_text())
            conn.execute(
                "INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, %s, %s)",
                (migration.version, migration.name, migration.checksum),
            )
            applied.append(migration.version)
        for table, model_id, dimension, name, valid in _indexes_to_build(conn, embedding_models, EMBEDDED_TABLES):
            if _more_rows_than(conn, table, model_id, index_build_max_rows):
                logger.warning(
                    "vector index deferred: more than %d rows of %s in %s; build it with"
                    " ensure_embedding_indexes_concurrently (rag migrate, or the migrator's build-indexes)",
                    index_build_max_rows, model_id, table, extra={"index": name},
                )  # fmt: skip
                continue
            if valid is False:  # left invalid by an interrupted concurrent build
                conn.execute(_drop_index_sql(name, concurrently=False))
            ensure_embedding_index(conn, table, model_id, dimension)
    return applied


def _indexes_to_build(
    conn: psycopg.Connection, embedding_models: dict[str, int], tables: Sequence[str]
) -> Iterator[tuple[str, str, int, str, bool | None]]:
    """(table, model, dimension, index name, validity) of each vector index missing (None) or invalid (False)."""
    existing = {row[0] for row in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")}
    for model_id, dimension in embedding_models.items():
        for table in tables:
            if table not in existing:
                continue
            name = embedding_index_name(table, model_id, dimension)
            valid = _index_validity(conn, name)
            if valid is not True:
                yield table, model_id, dimension, name, valid


def _drop_index_sql(name: str, *, concurrently: bool) -> sql.Composed:
    from psycopg import sql

    verb = "DROP INDEX CONCURRENTLY IF EXISTS {}" if concurrently else "DROP INDEX IF EXISTS {}"
    return sql.SQL(verb).format(sql.Identifier(name))


def _index_validity(conn: psycopg.Connection, name: str) -> bool | None:
    """True/False: the index exists and is valid/invalid (an interrupted CONCURRENTLY build); None: no such index."""
    row = conn.execute(
        "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
        " WHERE c.relname = %s AND c.relnamespace = current_schema()::regnamespace",
        (name,),
    ).fetchone()
    return None if row is None else bool(row[0])


def _more_rows_than(conn: psycopg.Connection, table: str, model_id: str, limit: int) -> bool:
    """Whether ``table`` holds more than ``limit`` rows of ``model_id`` (reads at most limit + 1 of them)."""
    from psycopg import sql

    query = sql.SQL("SELECT count(*) FROM (SELECT 1 FROM {} WHERE embedding_model = %s LIMIT %s) AS s").format(
        sql.Identifier(table)
    )
    row = conn.execute(query, (model_id, limit + 1)).fetchone()
    return row is not None and int(row[0]) > limit


def ensure_embedding_index(conn: psycopg.Connection, table: str, model_id: str, dimension: int) -> str:
    """A partial HNSW (cosine) index over one model's vectors of ``table``."""
    conn.execute(embedding_index_sql(table, model_id, dimension, concurrently=False))
    return embedding_index_name(table, model_id, dimension)


def ensure_embedding_indexes_concurrently(
    conn: psycopg.Connection,
    embedding_models: dict[str, int],
    *,
    tables: tuple[str, ...] = EMBEDDED_TABLES,
    maintenance_work_mem: str | None = None,
) -> list[str]:
    """Build every missing or invalid vector index with ``CREATE INDEX CONCURRENTLY``: writes go on meanwhile.

    Needs an autocommit connection (CONCURRENTLY cannot run in a transaction) and takes as long as the build takes
    (no statement timeout). An index left invalid by an interrupted build is dropped and built again. Builders
    queue on an advisory lock of their own, not the migrators'. ``maintenance_work_mem`` (e.g. "1GB"): an HNSW
    build is fast only while its graph fits in it. Returns the indexes built.
    """
    from psycopg import sql

    if not conn.autocommit:
        raise ValueError("ensure_embedding_indexes_concurrently needs an autocommit connection")
    built: list[str] = []
    conn.execute("SELECT pg_advisory_lock(%s)", (_INDEX_LOCK_ID,))
    try:
        conn.execute("SET statement_timeout = 0")
        if maintenance_work_mem:
            conn.execute(sql.SQL("SET maintenance_work_mem = {}").format(sql.Literal(maintenance_work_mem)))
        for table, model_id, dimension, name, valid in list(_indexes_to_build(conn, embedding_models, tables)):
            if valid is False:
                conn.execute(_drop_index_sql(name, concurrently=True))
            logger.info("building vector index concurrently", extra={"index": name, "table": table})
            conn.execute(embedding_index_sql(table, model_id, dimension, concurrently=True))
            built.append(name)
    finally:
        conn.execute("RESET statement_timeout")
        if maintenance_work_mem:
            conn.execute("RESET maintenance_work_mem")
        conn.execute("SELECT pg_advisory_unlock(%s)", (_INDEX_LOCK_ID,))
    return built


def applied_versions(conn: psycopg.Connection) -> list[str]:
    rows = conn.execute("SELECT version FROM schema_migrations ORDER BY version").fetchall()
    return [row[0] for row in rows]


def migrate_database(settings: Settings, url: str | None = None, *, build_large_indexes: bool = True) -> list[str]:
    """``rag migrate`` and the deploy-time custom resource: migrate the configured database.

    ``build_large_indexes``: then build the indexes ``migrate`` deferred, concurrently (``rag migrate``); the
    custom resource passes False (a deploy must finish in minutes) and leaves them to its build-indexes invocation.
    """
    from rag.store.connection import connect, resolve_database_url

    models = {settings.embedding.model_id: settings.embedding.resolved_dimension}
    with connect(url or resolve_database_url(settings), register=False) as conn:
        applied = migrate(
            conn, settings.database.migrations_dir, models, index_build_max_rows=settings.database.index_build_max_rows
        )
        if build_large_indexes:
            ensure_embedding_indexes_concurrently(conn, models)
        return applied


def build_embedding_indexes(settings: Settings, url: str | None = None, *, maintenance_work_mem: str | None = None) -> list[str]:
    """The configured model's missing vector indexes, built concurrently (the migrator's build-indexes invocation)."""
    from rag.store.connection import connect, resolve_database_url

    with connect(url or resolve_database_url(settings), register=False) as conn:
        return ensure_embedding_indexes_concurrently(
            conn,
            {settings.embedding.model_id: settings.embedding.resolved_dimension},
            maintenance_work_mem=maintenance_work_mem,
        )
