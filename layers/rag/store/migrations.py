"""Numbered SQL migrations from ``sql/``, applied in order and recorded in a table.

Re-running is a no-op. An advisory lock keeps concurrent migrators (several
Lambdas, a deploy and a developer) from applying the same file twice.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psycopg

    from rag.config import Settings

MIGRATION_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_LOCK_ID = 7_320_114_001  # any constant shared by every migrator of this schema

# Tables with an ``embedding``/``embedding_model`` pair: each gets a partial HNSW index per model.
EMBEDDED_TABLES = ("chunks", "segments", "decisions", "risks", "opportunities", "tasks")


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


def migrate(conn: psycopg.Connection, migrations_dir: Path, embedding_models: dict[str, int]) -> list[str]:
    """Apply pending migrations, then make sure every configured model has its vector index.

    ``embedding_models`` maps a model id to its dimension. Returns the versions applied.
    """
    applied: list[str] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_ID,))
        conn.execute("SET LOCAL statement_timeout = 0")  # index builds take what they take
        conn.execute(
            """CREATE TABLE IF NOT EXISTS schema_migrations (
                   version text PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,
                   applied_at timestamptz NOT NULL DEFAULT now())"""
        )
        done = {row[0]: row[1] for row in conn.execute("SELECT version, checksum FROM schema_migrations")}
        for migration in discover(migrations_dir):
            if migration.version in done:
                continue
            conn.execute(migration.path.read_text())
            conn.execute(
                "INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, %s, %s)",
                (migration.version, migration.name, migration.checksum),
            )
            applied.append(migration.version)
        existing = {row[0] for row in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")}
        for model_id, dimension in embedding_models.items():
            for table in EMBEDDED_TABLES:
                if table in existing:
                    ensure_embedding_index(conn, table, model_id, dimension)
    return applied


def embedding_index_name(table: str, model_id: str, dimension: int) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", model_id.lower()).strip("_")[:24]
    digest = hashlib.sha1(f"{model_id}:{dimension}".encode()).hexdigest()[:8]
    return f"{table}_emb_{slug}_{dimension}_{digest}"


def ensure_embedding_index(conn: psycopg.Connection, table: str, model_id: str, dimension: int) -> str:
    """A partial HNSW (cosine) index over one model's vectors of ``table``."""
    from psycopg import sql

    name = embedding_index_name(table, model_id, dimension)
    conn.execute(
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS {name} ON {table} USING hnsw ((embedding::vector({dim})) vector_cosine_ops)"
            " WHERE embedding_model = {model}"
        ).format(
            name=sql.Identifier(name),
            table=sql.Identifier(table),
            dim=sql.Literal(int(dimension)),
            model=sql.Literal(model_id),
        )
    )
    return name


def applied_versions(conn: psycopg.Connection) -> list[str]:
    rows = conn.execute("SELECT version FROM schema_migrations ORDER BY version").fetchall()
    return [row[0] for row in rows]


def migrate_database(settings: Settings, url: str | None = None) -> list[str]:
    """``rag migrate`` and the deploy-time custom resource: migrate the configured database."""
    from rag.store.connection import connect, resolve_database_url

    with connect(url or resolve_database_url(settings), register=False) as conn:
        return migrate(
            conn, settings.migrations_dir, {settings.embedding_model_id: settings.resolved_embedding_dimension}
        )
