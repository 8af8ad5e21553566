"""Reads from a reader endpoint (a read replica, an Aurora reader, RDS Proxy's read-only endpoint), writes to the writer.

Configured by ``RAG_DATABASE_READER_URL`` (a URL of its own: local servers, tests) or ``RAG_DATABASE_READER_HOST``
(+ ``RAG_DATABASE_READER_PORT``): the writer's connection settings with only the host and port swapped, so user,
password or IAM token (signed for the reader's host), database and TLS are the writer's. Unset: every read is the
writer's, on one connection, as before.

A read uses the reader only while it is healthy: its replay lag, measured at most every
``database_reader_recheck_seconds`` per process (``LAG_SQL``), is within ``database_reader_max_lag_seconds``, and it
has not failed in the last ``database_reader_recheck_seconds``. A reader that cannot be reached within
``database_reader_timeout_seconds``, or whose connection breaks during a read, sends that read (run again from the
start) and the following ones to the writer: a replica stopped or failing over costs latency, never a request.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import urlsplit, urlunsplit

import psycopg

from rag.store.connection import (
    _url_from_secret,
    connection,
    local_database_url,
    open_pool,
    url_with_iam_token,
)

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

    from rag.config import Settings

logger = logging.getLogger(__name__)

T = TypeVar("T")
# Where a read's writes go: the writer connection, borrowed when first asked for.
WriterSource = Callable[[], psycopg.Connection]

# Seconds the server is behind its primary; 0 on a primary (a reader endpoint that currently resolves to the writer)
# and on a replica that has replayed all it received (an idle primary sends nothing, and nothing is missed). NULL
# where the functions return nothing (Aurora readers, which share the writer's storage; a replica that has replayed
# no transaction yet): no lag is known, and the reader is used.
LAG_SQL = """
    SELECT CASE
        WHEN NOT pg_is_in_recovery() THEN 0.0::float8
        WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0.0::float8
        ELSE extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8
    END"""


def reader_configured(settings: Settings) -> bool:
    return bool(settings.database.reader_url or settings.database.reader_host)


def with_endpoint(url: str, host: str, port: int | None) -> str:
    """``url`` with its host (and port, if given) replaced; user, password, database and parameters kept."""
    parts = urlsplit(url)
    userinfo = parts.netloc.rpartition("@")[0]
    netloc = f"{host}:{port or parts.port or 5432}"
    return urlunsplit(parts._replace(netloc=f"{userinfo}@{netloc}" if userinfo else netloc))


def resolve_reader_url(settings: Settings) -> str:
    """The reader's URL: ``database_reader_url``, else the writer's settings with ``database_reader_host``/port."""
    if settings.database.reader_url:
        return settings.database.reader_url
    host, port = settings.database.reader_host, settings.database.reader_port
    if not host:
        raise ValueError("no reader configured: set RAG_DATABASE_READER_URL or RAG_DATABASE_READER_HOST")
    if settings.database.url:
        return with_endpoint(settings.database.url, host, port)
    if settings.database.iam_url:  # the token is signed for the host it is presented to: sign for the reader's
        return url_with_iam_token(
            with_endpoint(settings.database.iam_url, host, port),
            settings.aws.region,
            sslmode=settings.database.sslmode,
            sslrootcert=settings.database.sslrootcert,
        )
    if settings.database.secret_arn:
        return _url_from_secret(settings, (host, port))
    return with_endpoint(local_database_url(settings), host, port)


class ReaderHealth:
    """What this process last learnt about the reader: its lag and when measured, and until when it is left alone."""

    def __init__(self) -> None:
        self.lag_seconds: float | None = None
        self.measured_at = float("-inf")
        self.avoid_until = float("-inf")
        self.down = False  # failed last time: tried with a connection of its own before the pool waits for it
        self._lock = threading.Lock()

    def avoided(self, now: float) -> bool:
        with self._lock:
            return now < self.avoid_until

    def needs_measuring(self, now: float, recheck_seconds: float) -> bool:
        with self._lock:
            return now - self.measured_at >= recheck_seconds

    def record_lag(self, lag_seconds: float | None, now: float, max_lag_seconds: float, recheck_seconds: float) -> None:
        with self._lock:
            self.lag_seconds, self.measured_at = lag_seconds, now
            if lag_seconds is not None and lag_seconds > max_lag_seconds:
                self.avoid_until = now + recheck_seconds

    def failed(self, now: float, recheck_seconds: float) -> None:
        with self._lock:
            self.avoid_until, self.measured_at = now + recheck_seconds, float("-inf")  # measured again when back
            self.down = True


health = ReaderHealth()
_fallbacks = 0  # reads a configured reader did not serve (lagging, unreachable, failed), since last taken
_fallbacks_lock = threading.Lock()


def take_reader_fallbacks() -> int:
    """Reads sent to the writer although a reader is configured, since the last call (the query function's metric)."""
    global _fallbacks
    with _fallbacks_lock:
        taken, _fallbacks = _fallbacks, 0
        return taken


def _fell_back() -> None:
    global _fallbacks
    with _fallbacks_lock:
        _fallbacks += 1


_reader_pool: ConnectionPool | None = None
_reader_target: tuple[object, ...] | None = None
_reader_lock = threading.Lock()


def _target(settings: Settings) -> tuple[object, ...]:
    return (settings.database.reader_url, settings.database.reader_host, settings.database.reader_port,
            settings.database.url, settings.database.iam_url, settings.database.secret_arn)  # fmt: skip


def get_reader_pool(settings: Settings) -> ConnectionPool:
    """The process-wide reader pool (the writer pool's sizes, its own short borrow timeout)."""
    global _reader_pool, _reader_target, health
    with _reader_lock:
        target = _target(settings)
        if _reader_pool is not None and (_reader_pool.closed or _reader_target != target):
            _reader_pool.close()
            _reader_pool = None
        if _reader_pool is None:
            timeout = settings.database.reader_timeout_seconds
            _reader_pool = open_pool(
                lambda: resolve_reader_url(settings), settings, name="rag-reader", timeout=timeout,
                connect_timeout=_connect_timeout(settings),
            )  # fmt: skip
            _reader_target, health = target, ReaderHealth()
        return _reader_pool


def _connect_timeout(settings: Settings) -> int:
    return max(1, round(settings.database.reader_timeout_seconds))  # libpq takes whole seconds


def close_reader_pool() -> None:
    """Close the reader's connections and forget its health (tests, shutdown)."""
    global _reader_pool, _reader_target, health
    with _reader_lock:
        if _reader_pool is not None:
            _reader_pool.close()
        _reader_pool, _reader_target, health = None, None, ReaderHealth()


def measure_lag(conn: psycopg.Connection) -> float | None:
    """The reader's lag in seconds (``LAG_SQL``); None where the server cannot tell (an engine without these functions).

    Raises ``psycopg.OperationalError`` when the connection fails: the reader is then unhealthy, not unmeasurable.
    """
    try:
        row = conn.execute(LAG_SQL, prepare=False).fetchone()
    except psycopg.OperationalError:
        raise
    except psycopg.Error as exc:  # e.g. a function an engine does not offer: no lag known, as for NULL
        logger.warning("the reader's lag cannot be measured: %s", exc)
        return None
    return None if row is None or row[0] is None else max(0.0, float(row[0]))


def _reader_failure(conn: psycopg.Connection, exc: psycopg.OperationalError) -> bool:
    """Whether ``exc`` is the reader's doing: its connection broke, or replay cancelled the query (a standby conflict)."""
    return conn.broken or conn.closed or isinstance(exc, psycopg.errors.SerializationFailure)


class Connections:
    """The connections of one unit of work (an API request): the writer, and the reader for reads that may lag.

    Each is borrowed from its pool on first use and given back by ``release``; without a configured (or healthy)
    reader, reads run on the writer's connection, so a request holds one connection as before.
    """

    def __init__(self, settings: Settings, clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.clock = clock
        self._writer: tuple[AbstractContextManager[psycopg.Connection], psycopg.Connection] | None = None
        self._reader: tuple[AbstractContextManager[psycopg.Connection], psycopg.Connection] | None = None

    def writer(self) -> psycopg.Connection:
        if self._writer is None:
            borrowed = connection(self.settings)
            self._writer = (borrowed, borrowed.__enter__())
        return self._writer[1]

    def read(self, work: Callable[[psycopg.Connection, WriterSource | None], T]) -> T:
        """``work(conn, writer)``: on the reader with ``writer`` for its writes, else on the writer with ``None``.

        ``work`` must only read on ``conn``; if the reader fails under it, it runs again, on the writer.
        """
        reader = self._healthy_reader()
        if reader is None:
            if reader_configured(self.settings):
                _fell_back()
            return work(self.writer(), None)
        try:
            return work(reader, self.writer)
        except psycopg.OperationalError as exc:
            if not _reader_failure(reader, exc):
                raise
            logger.warning("the reader failed during a read; reading the writer", extra={"error": str(exc)})
            self._reader_failed()
            _fell_back()
            return work(self.writer(), None)

    def _healthy_reader(self) -> psycopg.Connection | None:
        settings = self.settings
        if not reader_configured(settings) or health.avoided(self.clock()):
            return None
        if self._reader is None:
            try:
                if health.down:  # refused at once, instead of the pool retrying until its timeout
                    psycopg.connect(resolve_reader_url(settings), connect_timeout=_connect_timeout(settings)).close()
                    health.down = False
                borrowed = get_reader_pool(settings).connection()
                self._reader = (borrowed, borrowed.__enter__())
            except psycopg.OperationalError as exc:  # PoolTimeout included: down, unreachable, refusing
                logger.warning("the reader cannot be reached; reading the writer", extra={"error": str(exc)})
                self._reader_failed()
                return None
        conn = self._reader[1]
        if health.needs_measuring(self.clock(), settings.database.reader_recheck_seconds):
            try:
                lag = measure_lag(conn)
            except psycopg.OperationalError as exc:
                logger.warning("the reader's lag cannot be measured; reading the writer", extra={"error": str(exc)})
                self._reader_failed()
                return None
            health.record_lag(lag, self.clock(), settings.database.reader_max_lag_seconds,
                              settings.database.reader_recheck_seconds)  # fmt: skip
            if health.avoided(self.clock()):
                logger.warning("the reader lags %.1f s behind the writer; reading the writer", lag)
                self._release_reader()
                return None
        return conn

    def _reader_failed(self) -> None:
        health.failed(self.clock(), self.settings.database.reader_recheck_seconds)
        self._release_reader()

    def _release_reader(self) -> None:
        if self._reader is not None:
            borrowed, self._reader = self._reader[0], None
            try:
                borrowed.__exit__(None, None, None)  # the pool checks a returned connection and drops a broken one
            except Exception:  # noqa: BLE001  # giving back a dead connection must not fail the read
                logger.debug("returning the reader connection failed", exc_info=True)

    def release(self) -> None:
        self._release_reader()
        if self._writer is not None:
            borrowed, self._writer = self._writer[0], None
            borrowed.__exit__(None, None, None)
