"""Database connections: one per warm Lambda, reopened when it breaks."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING
from urllib.parse import quote

if TYPE_CHECKING:
    import psycopg

    from rag.config import Settings

LOCAL_DATABASE = "rag"

_connection: psycopg.Connection | None = None


def local_database_url(settings: Settings, database: str = LOCAL_DATABASE) -> str:
    """The embedded server that ``rag up`` (and the tests) start on 127.0.0.1."""
    return f"postgresql://postgres@127.0.0.1:{settings.local_pg_port}/{database}"


def resolve_database_url(settings: Settings) -> str:
    """DATABASE_URL, else the Secrets Manager secret (AWS), else the embedded server."""
    if settings.database_url:
        return settings.database_url
    if settings.database_secret_arn:
        return _url_from_secret(settings)
    return local_database_url(settings)


def _url_from_secret(settings: Settings) -> str:
    import boto3

    client = boto3.client("secretsmanager", region_name=settings.aws_region, endpoint_url=settings.aws_endpoint_url)
    secret = json.loads(client.get_secret_value(SecretId=settings.database_secret_arn)["SecretString"])
    user, password = quote(secret["username"], safe=""), quote(secret["password"], safe="")
    host, port = secret["host"], secret.get("port", 5432)
    dbname = secret.get("dbname", "postgres")
    return f"postgresql://{user}:{password}@{host}:{port}/{dbname}?sslmode=require"


def connect(url: str, *, register: bool = True, connect_timeout: int = 5) -> psycopg.Connection:
    """A new autocommit connection; callers open transactions explicitly."""
    import psycopg

    conn = psycopg.connect(url, autocommit=True, connect_timeout=connect_timeout, application_name="meeting-rag")
    if register:
        from pgvector.psycopg import register_vector

        register_vector(conn)
    return conn


def get_connection(settings: Settings) -> psycopg.Connection:
    """The process-wide connection, opened on first use and after a failure."""
    global _connection
    if _connection is None or _connection.closed or _connection.broken:
        _connection = connect(resolve_database_url(settings))
    return _connection


def close_connection() -> None:
    global _connection
    if _connection is not None:
        _connection.close()
    _connection = None
