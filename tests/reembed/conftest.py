"""A database of its own for each re-embedding test: a run swaps columns and drops the old model's indexes."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from rag.config import Settings


@pytest.fixture
def own_database(database_url: str) -> Iterator[str]:
    import psycopg
    from psycopg.conninfo import make_conninfo

    from rag.store.migrations import migrate_database

    name = f"rag_reembed_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = make_conninfo(database_url, dbname=name)
    migrate_database(Settings(database_url=url), url)
    yield url
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def conn(own_database: str) -> Iterator[Any]:
    from rag.store.connection import connect

    with connect(own_database) as connection:
        yield connection
