"""Database connections: one per warm Lambda, reopened when it breaks.

Where the database is, in order: ``DATABASE_URL``; ``RAG_DATABASE_IAM_URL`` (RDS Proxy or RDS with IAM
authentication: the URL names host, port, user and database, and the password is a 15-minute IAM token made
at connect time, so no function ever holds a database password); the Secrets Manager secret
``RAG_DATABASE_SECRET_ARN``; else the embedded server of ``rag up``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING
from urllib.parse import quote, urlsplit, urlunsplit

if TYPE_CHECKING:
    import psycopg

    from rag.config import Settings

LOCAL_DATABASE = "rag"
IAM_URL_ENV = "RAG_DATABASE_IAM_URL"  # Settings.database_iam_url; the CDK app sets it on every function

_connection: psycopg.Connection | None = None


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
