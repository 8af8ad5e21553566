"""A database of its own for each re-embedding test: a run swaps columns and drops the old model's indexes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rag.config import Settings


@pytest.fixture
def own_database(scratch_database: str) -> str:
    from rag.store.migrations import migrate_database

    migrate_database(Settings(database_url=scratch_database), scratch_database)
    return scratch_database


@pytest.fixture
def conn(own_database: str) -> Iterator[Any]:
    from rag.store.connection import connect

    with connect(own_database) as connection:
        yield connection
