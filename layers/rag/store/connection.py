"""Database connections: a small pool per process, every borrower gets its own connection.

Where the database is, in order: ``DATABASE_URL``; ``RAG_DATABASE_IAM_URL`` (RDS Proxy or RDS with IAM
authentication: the URL names host, port, user and database, and the password is a 15-minute IAM token made
at connect time, so no function ever holds a database password); the Secrets Manager secret
``RAG_DATABASE_SECRET_ARN`` (with ``RAG_DATABASE_NAME``: RDS's generated secrets name no database); else the
embedded server of ``rag up``.

TLS: connections to an RDS instance or RDS Proxy (``*.rds.amazonaws.com``) verify the server (``verify-full``)
against the CA bundle shipped in ``rag/certs/`` (Amazon RDS root CAs + Amazon Trust Services roots for the proxy);
other hosts get ``require`` unless ``RAG_DATABASE_SSLMODE`` / the URL / the secret say otherwise.

A warm Lambda handles one event at a time, so its pool holds one connection; ``rag up`` runs the queue
worker and the query API side by side, and each borrows its own. psycopg_pool checks a connection before
lending it (one round trip), so a connection broken by a database restart or failover is replaced instead
of failing the request, and rolls back whatever a borrower left open, so each comes back clean.
"""

from __future__ import annotations

import functools
import json
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

    from rag.config import Settings

LOCAL_DATABASE = "rag"
IAM_URL_ENV = "RAG_DATABASE_IAM_URL"  # Settings.database.iam_url; the CDK app sets it on every function
DATABASE_NAME_ENV = "RAG_DATABASE_NAME"  # Settings.database.name; the database a secret's server is asked for

# Amazon RDS root CAs (the global bundle) + Amazon Trust Services roots (RDS Proxy's ACM certificate): see certs/README.md.
RDS_CA_BUNDLE = Path(__file__).resolve().parents[1] / "certs" / "rds-ca-bundle.pem"
RDS_HOST_SUFFIX = ".rds.amazonaws.com"
# Regions whose "Amazon RDS <region> Root CA RSA2048/RSA4096/ECC384 G1" the bundle holds (a test reads them from it).
# An instance elsewhere gets sslmode=require and a warning until the bundle is refreshed (or RAG_DATABASE_SSLROOTCERT).
RDS_CA_REGIONS = frozenset(
    {
        "af-south-1", "ap-east-1", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-south-1", "ap-south-2",
        "ap-southeast-1", "ap-southeast-2", "ap-southeast-3", "ap-southeast-4", "ca-central-1", "eu-central-1",
        "eu-central-2", "eu-north-1", "eu-south-1", "eu-south-2", "eu-west-1", "eu-west-2", "eu-west-3",
        "me-central-1", "me-south-1", "sa-east-1", "us-east-1", "us-east-2", "us-west-1", "us-west-2",
    }
)  # fmt: skip
VERIFYING_SSLMODES = ("verify-ca", "verify-full")

logger = logging.getLogger(__name__)

_pool: ConnectionPool | None = None
_pool_target: tuple[object, ...] | None = None
_pool_lock = threading.Lock()


def local_database_url(settings: Settings, database: str = LOCAL_DATABASE) -> str:
    """The embedded server that ``rag up`` (and the tests) start on 127.0.0.1."""
    return f"postgresql://postgres@127.0.0.1:{settings.local.pg_port}/{database}"


def resolve_database_url(settings: Settings) -> str:
    """DATABASE_URL, else IAM authentication, else the Secrets Manager secret (AWS), else the embedded server."""
    if settings.database.url:
        return settings.database.url
    if settings.database.iam_url:
        return url_with_iam_token(
            settings.database.iam_url,
            settings.aws.region,
            sslmode=settings.database.sslmode,
            sslrootcert=settings.database.sslrootcert,
        )
    if settings.database.secret_arn:
        return _url_from_secret(settings)
    return local_database_url(settings)


def _url_from_secret(settings: Settings, endpoint: tuple[str, int | None] | None = None) -> str:
    """The URL of the secret's server (or of ``endpoint``: a reader), database ``RAG_DATABASE_NAME`` (else ``dbname``).

    RDS's generated secrets (``Credentials.from_generated_secret``) hold username, password, engine, host, port and
    dbInstanceIdentifier, and no ``dbname``: without the configured name there is no right database to guess
    (``postgres`` would be the wrong one), so that is an error.
    """
    import boto3

    client = boto3.client("secretsmanager", region_name=settings.aws.region, endpoint_url=settings.aws.endpoint_url)
    secret = json.loads(client.get_secret_value(SecretId=settings.database.secret_arn)["SecretString"])
    dbname = settings.database.name or secret.get("dbname")
    if not dbname:
        raise ValueError(
            f"the database secret {settings.database.secret_arn} names no database (RDS's generated secrets carry no"
            f" 'dbname') and {DATABASE_NAME_ENV} is not set: set {DATABASE_NAME_ENV} to the database to use"
        )
    user, password = quote(secret["username"], safe=""), quote(secret["password"], safe="")
    host, port = secret["host"], secret.get("port", 5432)
    if endpoint is not None:
        host, port = endpoint[0], endpoint[1] or port
    tls = tls_parameters(
        host, sslmode=settings.database.sslmode, requested=secret.get("sslmode"), sslrootcert=settings.database.sslrootcert
    )
    query = urlencode(tls, safe="/", quote_via=quote)
    return f"postgresql://{user}:{password}@{host}:{port}/{quote(dbname, safe='')}?{query}"


def is_rds_host(host: str) -> bool:
    """An RDS instance, cluster or RDS Proxy endpoint (``...<region>.rds.amazonaws.com``)."""
    return host.lower().rstrip(".").endswith(RDS_HOST_SUFFIX)


def _bundle_covers(host: str) -> bool:
    """Whether the shipped bundle can verify ``host``: a proxy (Amazon Trust Services roots) or a known region."""
    labels = host.lower().rstrip(".").split(".")  # name, [proxy-]hash, region, rds, amazonaws, com
    if len(labels) < 5:
        return False
    return labels[-5].startswith("proxy-") or labels[-4] in RDS_CA_REGIONS


def tls_parameters(
    host: str, *, sslmode: str | None = None, requested: str | None = None, sslrootcert: Path | str | None = None
) -> dict[str, str]:
    """``sslmode`` (and ``sslrootcert``) for a connection to ``host``.

    ``sslmode`` is the operator's setting (``RAG_DATABASE_SSLMODE``) and always wins; ``requested`` is what the URL or
    the secret asks for. An RDS endpoint asked for nothing or for ``require`` (which encrypts but does not check who
    answers) is verified instead: ``verify-full`` against ``sslrootcert`` or the bundled RDS CAs. Other hosts get
    ``require`` unless asked otherwise.
    """
    rds = is_rds_host(host)
    if sslmode:
        mode = sslmode
    elif rds and requested in (None, "require"):
        if sslrootcert or _bundle_covers(host):
            mode = "verify-full"
        else:
            logger.warning(
                "no bundled RDS CA for this endpoint's region: TLS without server verification"
                " (set RAG_DATABASE_SSLROOTCERT to AWS's current global bundle)",
                extra={"host": host},
            )
            mode = "require"
    else:
        mode = requested or "require"
    params = {"sslmode": mode}
    if mode in VERIFYING_SSLMODES:
        root = Path(sslrootcert) if sslrootcert else (RDS_CA_BUNDLE if rds else None)
        if root is not None:
            if not root.is_file():
                raise FileNotFoundError(
                    f"CA bundle {root} not found: the layer must carry rag/certs/ (pyproject package-data),"
                    " or set RAG_DATABASE_SSLROOTCERT"
                )
            params["sslrootcert"] = str(root)
    return params


def url_with_iam_token(
    iam_url: str,
    region: str,
    *,
    rds_client: Any | None = None,
    sslmode: str | None = None,
    sslrootcert: Path | str | None = None,
) -> str:
    """``iam_url`` (no password) with a fresh IAM authentication token as its password.

    The token is a SigV4-presigned request made locally from the function's credentials (no API call);
    RDS Proxy and RDS accept it for 15 minutes, and only over TLS: an RDS endpoint is verified (``verify-full``
    with the bundled CAs, see ``tls_parameters``), any other host gets ``sslmode=require`` unless the URL says otherwise.
    """
    parts = urlsplit(iam_url)
    if parts.scheme not in ("postgresql", "postgres") or not parts.hostname or not parts.username:
        raise ValueError(f"{IAM_URL_ENV} must look like postgresql://user@host:port/dbname, not {iam_url!r}")
    if parts.password:
        raise ValueError(f"{IAM_URL_ENV} must not carry a password: the IAM token is the password")
    port = parts.port or 5432
    if rds_client is None:
        token = iam_auth_token(parts.hostname, port, parts.username, region)
    else:
        token = rds_client.generate_db_auth_token(DBHostname=parts.hostname, Port=port, DBUsername=parts.username, Region=region)
    netloc = f"{quote(parts.username, safe='')}:{quote(token, safe='')}@{parts.hostname}:{port}"
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    if "sslrootcert" in query:  # the URL names its own CA file: keep it
        sslrootcert = sslrootcert or query["sslrootcert"]
    query.update(tls_parameters(parts.hostname, sslmode=sslmode, requested=query.get("sslmode"), sslrootcert=sslrootcert))
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query, safe="/", quote_via=quote), parts.fragment))


def iam_auth_token(hostname: str, port: int, username: str, region: str) -> str:
    """What ``boto3.client("rds").generate_db_auth_token`` returns, signed by botocore's own request signer.

    Creating the RDS client only to sign locally loads RDS's service model and endpoint rules: about 80 ms of
    every cold start (each function's first connection). The signature is the same (tests/store/test_iam_token.py).
    """
    from botocore.awsrequest import prepare_request_dict
    from botocore.exceptions import NoCredentialsError
    from botocore.model import ServiceId
    from botocore.signers import RequestSigner

    session = _signing_session()
    credentials = session.get_credentials()
    if credentials is None:
        raise NoCredentialsError()
    signer = RequestSigner(ServiceId("rds"), region, "rds", "v4", credentials, session.get_component("event_emitter"))
    request: dict[str, Any] = {
        "url_path": "/", "query_string": "", "headers": {}, "method": "GET",
        "body": {"Action": "connect", "DBUser": username},
    }  # fmt: skip
    # botocore's generate_db_auth_token: a scheme to parse the endpoint by, removed again (RDS wants none).
    prepare_request_dict(request, f"https://{hostname}:{port}")
    url: str = signer.generate_presigned_url(
        request, operation_name="connect", expires_in=900, region_name=region, signing_name="rds-db"
    )
    return url.removeprefix("https://")


@functools.cache
def _signing_session() -> Any:
    """One botocore session per process: its credential chain is resolved once (Lambda: the role's variables)."""
    import botocore.session

    return botocore.session.get_session()


@contextmanager
def pipelined_transaction(conn: psycopg.Connection) -> Iterator[None]:
    """One transaction whose statements (BEGIN to COMMIT) go to the server as one pipeline: one round trip.

    psycopg's ``transaction()`` inside a pipeline waits for the server at BEGIN and again at
    COMMIT (three round trips for a search, a fraction of a millisecond each locally, the
    larger part of a search through RDS Proxy). Results are read after the block. On an
    error the transaction is rolled back before the error goes up, so the connection is
    ready for the next caller. A connection that is not in autocommit keeps psycopg's own handling.
    """
    from psycopg.pq import TransactionStatus

    if not conn.autocommit:
        with conn.pipeline(), conn.transaction():
            yield
        return
    try:
        with conn.pipeline():
            conn.execute("BEGIN", prepare=False)
            yield
            conn.execute("COMMIT", prepare=False)
    except BaseException:
        if conn.info.transaction_status in (TransactionStatus.INTRANS, TransactionStatus.INERROR):
            conn.execute("ROLLBACK", prepare=False)
        raise


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
    return (settings.database.url, settings.database.iam_url, settings.database.secret_arn, settings.local.pg_port)


def get_pool(settings: Settings) -> ConnectionPool:
    """The process-wide pool, opened on first use (connections are made lazily, then kept while warm)."""
    global _pool, _pool_target
    with _pool_lock:
        target = _target(settings)
        if _pool is not None and (_pool.closed or _pool_target != target):
            _pool.close()
            _pool = None
        if _pool is None:
            # A callable: every new connection resolves the URL again (a fresh IAM token, a rotated secret).
            _pool = open_pool(lambda: resolve_database_url(settings), settings, name="rag")
            _pool_target = target
        return _pool


def open_pool(
    conninfo: Callable[[], str], settings: Settings, *, name: str, timeout: float | None = None, connect_timeout: int = 5
) -> ConnectionPool:
    """A pool of autocommit connections, each checked before it is lent (``name`` is also the application_name)."""
    from psycopg_pool import ConnectionPool

    return ConnectionPool(
        conninfo=conninfo,
        kwargs={"autocommit": True, "connect_timeout": connect_timeout, "application_name": f"meeting-{name}"},
        min_size=0,
        max_size=settings.database.pool_size,
        timeout=timeout or settings.database.pool_timeout_seconds,
        configure=_register_vector,
        check=ConnectionPool.check_connection,
        name=name,
        open=True,
    )


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
