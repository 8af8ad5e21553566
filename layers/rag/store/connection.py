"""Database connections: a small pool per process, every borrower gets its own connection.

Where the database is, in order: ``DATABASE_URL``; ``RAG_DATABASE_IAM_URL`` (RDS Proxy or RDS with IAM
authentication: the URL names host, port, user and database, and the password is a 15-minute IAM token made
at connect time, so no function ever holds a database password); the Secrets Manager secret
``RAG_DATABASE_SECRET_ARN``; else the embedded server of ``rag up``.

A warm Lambda handles one event at a time, so its pool holds one connection; ``rag up`` runs the queue
worker and the query API side by side, and each borrows its own. psycopg_pool checks a connection before
lending it (one round trip), so a connection broken by a database restart or failover is replaced instead
of failing the request, and rolls back whatever a borrower left open, so each comes back clean.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING
from urllib.parse import quote, urlsplit, urlunsplit

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

    from rag.config import Settings

LOCAL_DATABASE = "rag"
IAM_URL_ENV = "RAG_DATABASE_IAM_URL"  # Settings.database_iam_url; the CDK app sets it on every function

_pool: ConnectionPool | None = None
_pool_target: tuple[object, ...] | None = None
_pool_lock = threading.Lock()


def local_database_url(settings: Settings, database: str = LOCAL_DATABASE) -> str:
    """The embedded server that ``rag up`` (and the tests) start on 127.0.0.1."""
    return f"postgresql://postgres@127.0.0.1:{settings.local_pg_port}/{database}"


def resolve_database_url(settings: Settings) -> str:
    """DATABASE_URL, else IAM authentication, else the Secrets Manager secret (AWS), else the embedded server."""
    if settings.database_url:
        return settings.database_url
    if settings.database_iam_url:
        return url_with_iam_token(settings.database_iam_url, settings.aws_region)
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
    # RDS's secrets carry no sslmode: TLS is required unless a (non-RDS) secret says otherwise.
    sslmode = secret.get("sslmode", "require")
    return f"postgresql://{user}:{password}@{host}:{port}/{dbname}?sslmode={sslmode}"


def url_with_iam_token(iam_url: str, region: str, *, rds_client: object | None = None) -> str:
    """``iam_url`` (no password) with a fresh IAM authentication token as its password.

    The token is a SigV4-presigned request made locally from the function's credentials (no API call);
    RDS Proxy and RDS accept it for 15 minutes, and only over TLS, so ``sslmode=require`` is the default.
    """
    parts = urlsplit(iam_url)
    if parts.scheme not in ("postgresql", "postgres") or not parts.hostname or not parts.username:
        raise ValueError(f"{IAM_URL_ENV} must look like postgresql://user@host:port/dbname, not {iam_url!r}")
    if parts.password:
        raise ValueError(f"{IAM_URL_ENV} must not carry a password: the IAM token is the password")
    port = parts.port or 5432
    if rds_client is None:
        import boto3

        rds_client = boto3.client("rds", region_name=region)
    token = rds_client.generate_db_auth_token(  # type: ignore[attr-defined]
        DBHostname=parts.hostname, Port=port, DBUsername=parts.username, Region=region
    )
    netloc = f"{quote(parts.username, safe='')}:{quote(token, safe='')}@{parts.hostname}:{port}"
    query = parts.query if "sslmode=" in parts.query else "&".join(filter(None, [parts.query, "sslmode=require"]))
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def connect(url: str, *, register: bool = True, connect_timeout: int = 5) -> psycopg.Connection:
    """A new autocommit connection; callers open transactions explicitly."""
    import psycopg

    conn = psycopg.connect(url, autocommit=True, connect_timeout=connect_timeout, application_name="meeting-rag")
    if register:
        _register_vector(conn)
    return conn


def _register_vector(conn: psycopg.Connection) -> None:
    from pgvector.psycopg import register_vector

    register_vector(conn)


def _target(settings: Settings) -> tuple[object, ...]:
    """What decides where the pool connects: a change (tests switch databases) opens a new pool."""
    return (settings.database_url, settings.database_iam_url, settings.database_secret_arn, settings.local_pg_port)


def get_pool(settings: Settings) -> ConnectionPool:
    """The process-wide pool, opened on first use (connections are made lazily, then kept while warm)."""
    global _pool, _pool_target
    with _pool_lock:
        target = _target(settings)
        if _pool is not None and (_pool.closed or _pool_target != target):
            _pool.close()
            _pool = None
        if _pool is None:
            from psycopg_pool import ConnectionPool

            _pool = ConnectionPool(
                # A callable: every new connection resolves the URL again (a fresh IAM token, a rotated secret).
                conninfo=lambda: resolve_database_url(settings),
                kwargs={"autocommit": True, "connect_timeout": 5, "application_name": "meeting-rag"},
                min_size=0,
                max_size=settings.database_pool_size,
                timeout=settings.database_pool_timeout_seconds,
                configure=_register_vector,
                check=ConnectionPool.check_connection,
                name="rag",
                open=True,
            )
            _pool_target = target
        return _pool


@contextmanager
def connection(settings: Settings) -> Iterator[psycopg.Connection]:
    """Borrow a checked connection for one unit of work (a request, a record, a batch)."""
    with get_pool(settings).connection() as conn:
        yield conn


def close_pool() -> None:
    """Close every pooled connection (tests, shutdown)."""
    global _pool, _pool_target
    with _pool_lock:
        if _pool is not None:
            _pool.close()
        _pool, _pool_target = None, None
