"""The stage Lambdas of functions/backfill/handler.py: their input, output and error contract."""

from __future__ import annotations

import pytest

from rag.backfill.errors import TransientError
from rag_local.lambdas import LocalContext, load_handler_module
from tests.backfill.conftest import RELEASE_PROCESS, ingest_file


@pytest.fixture
def handler_module():
    return load_handler_module("backfill")


def test_a_batch_returns_the_loop_progress_with_running_totals(db, local_embedder, handler_module):
    ingest_file(db, RELEASE_PROCESS, local_embedder)
    previous = {"iteration": 4, "processed": 0, "failed": 0, "remaining": 1, "processed_total": 7, "failed_total": 2}

    response = handler_module.segment_handler({"stage": "segment", "batch_size": 5, "previous": previous}, LocalContext())

    assert response == {
        "iteration": 5, "processed": 1, "failed": 0, "remaining": 0, "idle_batches": 0, "processed_total": 8, "failed_total": 2,
    }  # fmt: skip


def test_a_batch_that_finds_every_remaining_document_held_by_another_runner_is_idle(
    db, database_url, local_embedder, handler_module
):
    from rag.backfill.documents import claim_batch
    from rag.store.connection import connect

    ingest_file(db, RELEASE_PROCESS, local_embedder)
    previous = {
        "iteration": 1,
        "processed": 0,
        "failed": 0,
        "remaining": 1,
        "idle_batches": 1,
        "processed_total": 0,
        "failed_total": 0,
    }
    with connect(database_url) as other, other.transaction():
        assert len(claim_batch(other, "segment", local_embedder.model_id, 10)) == 1  # another runner holds it
        held = handler_module.segment_handler({"stage": "segment", "batch_size": 5, "previous": previous}, LocalContext())
    assert (held["processed"], held["remaining"], held["idle_batches"]) == (0, 1, 2)  # one more idle batch in a row

    free = handler_module.segment_handler({"stage": "segment", "batch_size": 5, "previous": held}, LocalContext())
    assert (free["processed"], free["remaining"], free["idle_batches"]) == (1, 0, 0)  # claimed: the count starts over


@pytest.mark.parametrize("batch_size", [0, 501, "10", True, None])
def test_bad_input_is_a_clear_error(handler_module, batch_size, database_url):
    with pytest.raises(ValueError, match=r"batch_size must be an integer from 1 to 500"):
        handler_module.embed_handler({"batch_size": batch_size}, LocalContext())


def test_an_unreachable_database_is_a_transient_error(handler_module, monkeypatch):
    from rag.config import get_settings
    from rag.store.connection import close_pool

    close_pool()
    monkeypatch.setenv("DATABASE_URL", "postgresql://postgres@127.0.0.1:1/nowhere?connect_timeout=2")
    get_settings.cache_clear()
    with pytest.raises(TransientError, match="database unavailable"):
        handler_module.extract_handler({"batch_size": 2}, LocalContext())
    close_pool()
