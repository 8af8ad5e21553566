"""Runs under real conditions: racing planners, an execution that died mid-run, a call that died after the swap."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from rag.reembed import steps, switch
from rag.store.embedding_space import active_model
from rag.store.schema import EMBEDDED_TABLES, embedding_index_name
from tests.backfill.conftest import BUDGET_REVIEW, SCANNER_SYNC
from tests.reembed.test_switch import SOURCE, TARGET, ingest, models, settings_for


@pytest.fixture
def corpus(conn: Any, own_database: str, tmp_path: Path) -> Any:
    from rag.embedding import get_embedder

    source = get_embedder(settings_for(own_database, tmp_path))
    for project in ("orion", "atlas"):
        ingest(conn, SCANNER_SYNC, source, project)
        ingest(conn, BUDGET_REVIEW, source, project)
    return settings_for(own_database, tmp_path, reembed_provider="local", reembed_runtime="onnx-int8",
                        reembed_manifest_records=100)  # fmt: skip


def run_step(conn: Any, settings: Any, event: dict[str, Any]) -> dict[str, Any]:
    return steps.run_step(conn, settings, *steps.jobs_for(settings), event)


def test_two_planners_at_once_start_one_run(conn: Any, own_database: str, corpus: Any) -> None:
    from rag.store.connection import connect

    planned: list[dict[str, Any]] = []
    barrier = threading.Barrier(2)

    def plan() -> None:
        with connect(own_database) as mine:
            barrier.wait()
            planned.append(run_step(mine, corpus, {"action": "plan"}))

    threads = [threading.Thread(target=plan) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(p["run_id"] is None for p in planned) == [False, True]
    assert conn.execute("SELECT count(*) FROM reembed_runs").fetchone()[0] == 1


def test_a_run_nothing_drives_any_more_is_resumed_and_a_live_one_is_left_alone(conn: Any, corpus: Any) -> None:
    planned = run_step(conn, corpus, {"action": "plan"})
    first = planned["manifests"][0]
    submitted = run_step(conn, corpus, {"action": "submit", **first})
    run_step(conn, corpus, {"action": "import", **submitted})
    assert run_step(conn, corpus, {"action": "plan"})["run_id"] is None  # its execution is alive: left to it
    # The execution died: nothing touched the run for two hours.
    conn.execute("UPDATE reembed_runs SET updated_at = now() - interval '2 hours'")
    conn.execute("UPDATE reembed_manifests SET updated_at = now() - interval '2 hours'")
    resumed = run_step(conn, corpus, {"action": "plan"})
    assert resumed["run_id"] == planned["run_id"]
    assert resumed["manifests"] == planned["manifests"][1:]  # the imported manifest is not done again
    assert run_step(conn, corpus, {"action": "plan"})["run_id"] is None  # resumed: alive again
    for item in resumed["manifests"]:
        run_step(conn, corpus, {"action": "import", **run_step(conn, corpus, {"action": "submit", **item})})
    assert run_step(conn, corpus, {"action": "finish", "run_id": planned["run_id"]})["status"] == "switched"
    assert active_model(conn) == (TARGET, 384)


def test_a_new_target_fails_the_run_towards_the_old_one_and_starts_over(conn: Any, corpus: Any) -> None:
    old = run_step(conn, corpus, {"action": "plan"})["run_id"]
    titan = corpus.with_values(reembed_provider="bedrock", reembed_dimension=512, reembed_runtime=None)
    new = run_step(conn, titan, {"action": "plan"})["run_id"]  # nothing drives the old run any more: no wait needed
    assert new is not None and new != old
    state, error = conn.execute("SELECT state, error FROM reembed_runs WHERE id = %s", (old,)).fetchone()
    assert state == "failed" and error == "the configured target changed to bedrock/amazon.titan-embed-text-v2:0@512"
    # The database's own model as the target: nothing to move.
    same = corpus.with_values(reembed_runtime="onnx")
    assert run_step(conn, same, {"action": "plan"})["run_id"] is None


def test_a_finish_that_died_after_the_swap_is_completed_by_the_retry(conn: Any, corpus: Any) -> None:
    run_id = run_step(conn, corpus, {"action": "plan"})["run_id"]
    target = switch.target_of(corpus)
    assert target is not None
    switch.catch_up(conn, target, budget=10_000)
    assert switch._swap(conn, run_id, target)  # noqa: SLF001 - the call died right after its swap committed
    conn.execute("UPDATE chunks SET embedding = NULL WHERE id = (SELECT min(id) FROM chunks)")  # a row left behind
    finished = run_step(conn, corpus, {"action": "finish", "run_id": run_id})
    assert finished["status"] == "switched"
    assert conn.execute("SELECT count(*) FROM chunks WHERE embedding IS NULL").fetchone()[0] == 0
    assert conn.execute("SELECT DISTINCT embedding_model FROM documents").fetchall() == [(TARGET,)]
    assert models(conn, "chunks") == {TARGET: conn.execute("SELECT count(*) FROM chunks").fetchone()[0]}
    indexes = {row[0] for row in conn.execute("SELECT indexname FROM pg_indexes WHERE indexdef LIKE '%hnsw%'")}
    assert {embedding_index_name(t, TARGET, 384) for t in EMBEDDED_TABLES} <= indexes
    assert not {embedding_index_name(t, SOURCE, 384) for t in EMBEDDED_TABLES} & indexes


def test_an_ingest_running_through_the_switch_loses_nothing_and_ends_in_the_new_model(
    conn: Any, own_database: str, corpus: Any
) -> None:
    from rag.store.connection import connect
    from rag.store.embedding_space import ModelSwitched, active_embedder

    run_id = run_step(conn, corpus, {"action": "plan"})["run_id"]
    written: list[str] = []
    retried: list[str] = []
    errors: list[BaseException] = []

    def ingest_meetings() -> None:
        with connect(own_database) as mine:
            for n in range(8):
                project = f"late{n}"
                while True:
                    try:  # as the ingest function: embed in the database's model, write, and retry a ModelSwitched
                        ingest(mine, SCANNER_SYNC, active_embedder(mine, corpus), project, check_model=True)
                        written.append(project)
                        break
                    except ModelSwitched:
                        retried.append(project)
                    except BaseException as exc:  # noqa: BLE001 - the test's finding
                        errors.append(exc)
                        return

    writer = threading.Thread(target=ingest_meetings)
    writer.start()
    while not written and writer.is_alive():
        writer.join(0.05)  # the switch comes while meetings are still arriving
    finished = run_step(conn, corpus, {"action": "finish", "run_id": run_id})
    while finished["status"] == "catching_up":
        finished = run_step(conn, corpus, {"action": "finish", "run_id": run_id})
    writer.join(120)
    assert errors == [] and finished["status"] == "switched"
    assert written == [f"late{n}" for n in range(8)]
    projects = {row[0] for row in conn.execute("SELECT DISTINCT project_id FROM documents")}
    assert {f"late{n}" for n in range(8)} <= projects
    # Whatever the order of the writes and the swap: every vector is the new model's, none missing.
    assert models(conn, "chunks") == {TARGET: conn.execute("SELECT count(*) FROM chunks").fetchone()[0]}
    assert conn.execute("SELECT count(*) FROM chunks WHERE embedding IS NULL").fetchone()[0] == 0
