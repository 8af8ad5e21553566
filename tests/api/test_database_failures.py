"""A database that fails a request: the documented error shape, a status saying whether to retry, and what to do."""

from __future__ import annotations

import psycopg
import pytest
from psycopg_pool import PoolTimeout

from tests.api.conftest import call


@pytest.fixture
def database_down(closed_database_url, monkeypatch):
    from rag.config import get_settings
    from rag.store.connection import close_pool

    monkeypatch.setenv("DATABASE_URL", closed_database_url)
    monkeypatch.setenv("RAG_DATABASE_POOL_TIMEOUT_SECONDS", "1")
    get_settings.cache_clear()
    yield
    close_pool()
    get_settings.cache_clear()


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [("GET", "/v1/projects", None), ("POST", "/v1/search", {"query": "battery", "mode": "keyword"}),
     ("POST", "/v1/ask", {"question": "What did we decide about the battery?"})],
)  # fmt: skip
def test_with_the_database_down_a_route_answers_503_saying_to_retry(database_down, method, path, body):
    status, answer = call(method, path, body)

    assert status == 503
    assert answer == {
        "error": {
            "code": "database_unavailable",
            "message": "the database is unreachable or busy: no connection came free in time; retry in a few seconds",
        }
    }


@pytest.mark.parametrize(
    ("exc", "status", "code"),
    [
        (psycopg.errors.QueryCanceled("canceling statement due to statement timeout"), 504, "timeout"),
        (PoolTimeout("couldn't get a connection after 1.00 sec"), 503, "database_unavailable"),
        (psycopg.OperationalError("server closed the connection unexpectedly"), 503, "database_unavailable"),
    ],
)
def test_each_database_failure_has_its_status_and_an_actionable_message(exc, status, code):
    from rag.store.failures import database_failure

    failure = database_failure(exc)

    assert (failure.status, failure.code) == (status, code)
    assert failure.message.endswith(("retry in a few seconds", "narrow the query or its scope"))
