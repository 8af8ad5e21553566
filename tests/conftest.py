"""Shared fixtures: a real PostgreSQL + pgvector with a fresh database per test session.

``DATABASE_URL`` selects any server with pgvector; otherwise the embedded server of
``rag up`` is used (started here when it is not running, and stopped again after).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "MeetingRagTest")
os.environ.pop("AWS_ENDPOINT_URL", None)  # tests talk to moto in-process, never to a running `rag up`

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures"


# Whole paths that are slow for the edit-test loop (`make check` leaves them out, `make test` runs them):
# CDK synthesis and the policy scanners, moto's Step Functions engine, servers on sockets.
SLOW_PATHS = (
    "infra/", "backfill/test_state_machine.py", "backfill/test_handler.py", "ask/test_mcp.py", "api/test_rerank.py",
    "local/test_api_server_limits.py", "ask/test_cli.py", "reembed/test_state_machine.py", "reembed/test_bedrock_run.py",
)  # fmt: skip


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        relative = item.path.relative_to(Path(__file__).parent).as_posix()
        if relative.startswith(SLOW_PATHS):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def isolated_environment() -> Iterator[None]:
    """Each test gets back the environment it started with.

    The CLI points ``AWS_ENDPOINT_URL`` at the local moto server when it runs in-process;
    left behind, that would send every later moto-backed test to a server that is not there.
    """
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)
    from rag.config import get_settings

    get_settings.cache_clear()


def _server_url_and_cleanup() -> tuple[str, bool]:
    from rag.config import Settings

    settings = Settings()
    if settings.database.url:
        return settings.database.url, False
    from rag_local import postgres

    pgdata = (REPO_ROOT / settings.local.dir / "pgdata").resolve()
    started = postgres.start(pgdata, settings.local.pg_port)
    return postgres.server_url(settings.local.pg_port), started


@pytest.fixture(scope="session")
def database_url() -> Iterator[str]:
    """A fresh, migrated database on a real server, dropped at the end of the session."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    server_url, started = _server_url_and_cleanup()
    name = f"rag_test_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = make_conninfo(server_url, dbname=name)
    assert conninfo_to_dict(url)["dbname"] == name
    previous = os.environ.get("DATABASE_URL")
    os.environ["DATABASE_URL"] = url
    _reset_settings()
    from rag.config import get_settings
    from rag.store.migrations import migrate_database

    migrate_database(get_settings(), url)
    yield url

    from rag.store.connection import close_pool

    close_pool()
    if previous is None:
        os.environ.pop("DATABASE_URL", None)
    else:
        os.environ["DATABASE_URL"] = previous
    _reset_settings()
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    if started:
        from rag.config import Settings
        from rag_local import postgres

        postgres.stop((REPO_ROOT / Settings().local.dir / "pgdata").resolve())


def _reset_settings() -> None:
    from rag.config import get_settings

    get_settings.cache_clear()


@pytest.fixture
def db(database_url: str) -> Iterator[object]:
    """A connection to the session's database, emptied before each test."""
    from rag.store.connection import connect

    with connect(database_url) as conn:
        conn.execute("TRUNCATE documents CASCADE")
        yield conn


@pytest.fixture(scope="session")
def local_embedder() -> object:
    """The real local model (loaded once per session: about 5 s)."""
    from rag.config import Settings
    from rag.embedding import get_embedder

    embedder = get_embedder(Settings(embedding_provider="local"))
    embedder.embed(["warm up"])
    return embedder


@pytest.fixture
def scratch_database(database_url: str) -> Iterator[str]:
    """An empty database of its own on the test server (for a test that migrates or swaps columns itself)."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    name = f"{conninfo_to_dict(database_url)['dbname']}_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    yield make_conninfo(database_url, dbname=name)
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
