"""The re-embedding Lambda (functions/backfill/handler.py, ``reembed_handler``): a thin call of ``rag.reembed.steps``
on a pooled connection of the real database; an unreachable database is a TransientError the machine retries."""

from __future__ import annotations

import os
import sys
import types
from typing import Any
from unittest import mock

import psycopg
import pytest

from rag.backfill.errors import TransientError
from rag_local.lambdas import LocalContext, load_handler_module

JOBS, STORE = object(), object()  # what jobs_for hands run_step: the handler passes them through untouched


@pytest.fixture
def handler_module():
    return load_handler_module("backfill")


@pytest.fixture
def steps(monkeypatch):
    """``rag.reembed.steps`` replaced by a recorder: the handler's part is the connection, the settings and the call."""
    calls: list[dict[str, Any]] = []
    module = types.ModuleType("rag.reembed.steps")
    module.answer = lambda event: {"run_id": event.get("run_id"), "status": "switched"}

    def run_step(conn, settings, jobs, store, event):
        calls.append({"conn": conn, "settings": settings, "jobs": jobs, "store": store, "event": event})
        return module.answer(event)

    module.run_step = run_step
    module.jobs_for = lambda settings: (JOBS, STORE)
    module.calls = calls
    monkeypatch.setitem(sys.modules, "rag.reembed.steps", module)
    return module


def test_a_step_runs_on_a_live_connection_with_the_settings_and_returns_its_result(database_url, handler_module, steps):
    from rag.config import get_settings

    def answer(event):
        [call] = steps.calls
        # The session's migrated database, open during the step.
        assert call["conn"].execute("SELECT to_regclass('documents') IS NOT NULL").fetchone()[0] is True
        return {"run_id": event["run_id"], "status": "catching_up", "caught_up": 3, "remaining": 1}

    steps.answer = answer
    event = {"action": "finish", "run_id": "r20261126"}

    result = handler_module.reembed_handler(event, LocalContext())

    assert result == {"run_id": "r20261126", "status": "catching_up", "caught_up": 3, "remaining": 1}
    [call] = steps.calls
    assert call["event"] == event
    assert (call["jobs"], call["store"]) == (JOBS, STORE)
    assert call["settings"] is get_settings()


def test_a_permanent_error_of_a_step_reaches_the_machine_unchanged(database_url, handler_module, steps):
    def answer(event):
        raise ValueError("manifest 3 of run r1 has no output")

    steps.answer = answer
    with pytest.raises(ValueError, match="manifest 3 of run r1 has no output"):  # the machine records it and fails the run
        handler_module.reembed_handler({"action": "import", "run_id": "r1", "manifest": 3, "job_arn": "arn"}, LocalContext())


def test_a_lost_connection_during_a_step_is_transient(database_url, handler_module, steps):
    def answer(event):
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    steps.answer = answer
    with pytest.raises(TransientError, match="server closed the connection unexpectedly"):
        handler_module.reembed_handler({"action": "check", "run_id": "r1", "manifest": 0, "job_arn": "arn"}, LocalContext())


def test_an_unreachable_database_is_a_transient_error(handler_module, steps):
    from rag.config import get_settings
    from rag.store.connection import close_pool

    close_pool()
    nowhere = {"DATABASE_URL": "postgresql://postgres@127.0.0.1:1/nowhere?connect_timeout=2"}
    try:
        with mock.patch.dict(os.environ, nowhere):
            get_settings.cache_clear()
            with pytest.raises(TransientError, match="unavailable"):
                handler_module.reembed_handler({"action": "plan"}, LocalContext())
        assert steps.calls == []  # no step ran without its database
    finally:
        close_pool()
        get_settings.cache_clear()  # the next test reads the real database's settings again


def test_the_handler_runs_the_library_s_plan(db, handler_module, monkeypatch):
    """Unstubbed: ``rag.reembed.steps`` itself, locally (no bucket: the local batch engine); nothing to re-embed in an
    empty corpus whose model is the configured one."""
    from rag.config import get_settings

    monkeypatch.setenv("RAG_EMBEDDING_PROVIDER", "local")
    get_settings.cache_clear()
    try:
        result = handler_module.reembed_handler({"action": "plan"}, LocalContext())
    finally:
        get_settings.cache_clear()
    assert result["run_id"] is None and result["manifests"] == []
