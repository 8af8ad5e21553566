"""A whole re-embedding run on a real PostgreSQL, with the local model processing the manifests as Bedrock would.

The corpus moves from all-MiniLM-L6-v2 (fp32) to its int8 export, a model of its own (other vectors, another id):
searches stay on the old model until the swap, then find the same passages in the new one, and never compare the two.
The run gets a database of its own: it swaps columns and drops the old model's index.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rag.config import Settings
from rag.reembed import steps
from rag.store.embedding_space import active_model, embedding_settings
from rag.store.schema import EMBEDDED_TABLES, embedding_index_name
from tests.backfill.conftest import BUDGET_REVIEW, SCANNER_SYNC

SOURCE = "local/all-MiniLM-L6-v2"
TARGET = "local/all-MiniLM-L6-v2-int8"


def settings_for(url: str, tmp_path: Path, **values: Any) -> Settings:
    return Settings(database_url=url, embedding_provider="local", llm_provider="none", reembed_local_dir=tmp_path, **values)


def ingest(conn: Any, path: Path, embedder: Any, project: str = "orion", *, check_model: bool = False) -> None:
    """A file as ingest writes it, in small chunks: enough rows for a manifest of a hundred records."""
    from rag.chunking import chunk_document
    from rag.parsing import parse_document
    from rag.store.documents import DocumentFields, SourceObject, replace_document

    parsed = parse_document(path.read_bytes(), path.name)
    chunks = chunk_document(parsed, embedder.count_tokens, max_tokens=24, overlap_tokens=0)
    source = SourceObject(tenant_id="default", project_id=project, bucket="docs", key=f"projects/{project}/{path.name}")
    vectors = embedder.embed([c.text for c in chunks])
    replace_document(conn, source, DocumentFields(title=path.stem), parsed, chunks, vectors, embedder.model_id,
                     check_model=check_model)  # fmt: skip


def semantic(conn: Any, settings: Settings, query: str) -> list[str]:
    from rag.embedding import get_embedder
    from rag.search.engine import SearchScope
    from rag.search.service import SearchQuery, run_search

    active = embedding_settings(conn, settings)
    found, _ = run_search(
        conn, get_embedder(active), active, SearchQuery(query, SearchScope("default", ("orion",)), mode="semantic", top_k=3)
    )
    return [hit.content for _, hit in found]


def models(conn: Any, table: str, column: str = "embedding_model") -> dict[str | None, int]:
    return dict(conn.execute(f"SELECT {column}, count(*) FROM {table} GROUP BY 1").fetchall())


def run_all_manifests(conn: Any, settings: Settings, planned: dict[str, Any]) -> list[dict[str, Any]]:
    jobs, store = steps.jobs_for(settings)
    imported = []
    for item in planned["manifests"]:
        submitted = steps.run_step(conn, settings, jobs, store, {"action": "submit", **item})
        checked = steps.run_step(conn, settings, jobs, store, {"action": "check", **submitted})
        assert checked["status"] == "completed"
        imported.append(steps.run_step(conn, settings, jobs, store, {"action": "import", **submitted}))
    return imported


def test_a_run_moves_every_vector_and_switches_searches_at_once(conn: Any, own_database: str, tmp_path: Path) -> None:
    from rag.backfill.stages import run_named_stage
    from rag.embedding import get_embedder

    before = settings_for(own_database, tmp_path)
    source = get_embedder(before)
    assert source.model_id == SOURCE
    for project in ("orion", "atlas"):
        ingest(conn, SCANNER_SYNC, source, project)
        ingest(conn, BUDGET_REVIEW, source, project)
    for stage in ("segment", "embed", "extract"):
        run_named_stage(conn, before, stage, 10)
    question = "when does the scanner rollout reach the warehouses?"
    answer_before = semantic(conn, before, question)
    chunk_count = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    assert chunk_count >= 100 and answer_before

    moving = settings_for(own_database, tmp_path, reembed_provider="local", reembed_runtime="onnx-int8",
                          reembed_manifest_records=100)  # fmt: skip
    jobs, store = steps.jobs_for(moving)
    planned = steps.run_step(conn, moving, jobs, store, {"action": "plan"})
    run_id = planned["run_id"]
    assert run_id and planned["manifests"] and planned["records"] >= 100
    assert steps.run_step(conn, moving, jobs, store, {"action": "plan"})["run_id"] is None  # one run at a time
    # Planned, nothing switched: searches stay on the old model.
    assert active_model(conn) == (SOURCE, 384)
    assert embedding_settings(conn, moving).embedding.model_id == SOURCE

    imported = run_all_manifests(conn, moving, planned)
    assert sum(r["imported"] for r in imported) == planned["records"] - 0 and all(r["failed_records"] == 0 for r in imported)
    again = run_all_manifests(conn, moving, {"manifests": planned["manifests"][:1]})  # an import retried: same rows
    assert again[0]["imported"] == imported[0]["imported"]
    # A meeting ingested during the run: no manifest covers it, finish embeds it online.
    ingest(conn, SCANNER_SYNC, source, project="late")
    assert models(conn, "chunks") == {SOURCE: conn.execute("SELECT count(*) FROM chunks").fetchone()[0]}
    assert semantic(conn, moving, question) == answer_before  # the new vectors are not searched before the swap

    finished = steps.run_step(conn, moving, jobs, store, {"action": "finish", "run_id": run_id})
    assert finished["status"] == "switched" and finished["caught_up"] > 0 and finished["remaining"] == 0
    assert active_model(conn) == (TARGET, 384)
    target = get_embedder(embedding_settings(conn, moving))
    assert target.model_id == TARGET
    for table in EMBEDDED_TABLES:
        total = conn.execute(f"SELECT count(*) FROM {table} WHERE embedding IS NOT NULL OR embedding_alt IS NOT NULL").fetchone()[
            0
        ]
        assert models(conn, table) == ({TARGET: total} if total else {}), table
        assert models(conn, table, "embedding_alt_model") == ({SOURCE: total} if total else {}), table
    # The new vectors are the new model's own: the int8 model's vector of a chunk, not the old one's.
    content, stored = conn.execute("SELECT content, embedding FROM chunks ORDER BY id LIMIT 1").fetchone()
    fresh = target.embed([content])[0]
    assert max(abs(a - b) for a, b in zip(stored.to_list(), fresh)) < 1e-4
    assert max(abs(a - b) for a, b in zip(stored.to_list(), source.embed([content])[0])) > 1e-3
    assert conn.execute("SELECT DISTINCT embedding_model FROM documents").fetchall() == [(TARGET,)]
    # Searches read the new model through its index; the old model's index is gone.
    indexes = {row[0] for row in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'chunks'")}
    assert embedding_index_name("chunks", TARGET, 384) in indexes
    assert embedding_index_name("chunks", SOURCE, 384) not in indexes
    answer_after = semantic(conn, moving, question)
    assert answer_before[0] in answer_after  # the int8 model ranks its own way, and finds the same passage
    assert steps.run_step(conn, moving, jobs, store, {"action": "plan"})["run_id"] is None  # already there
    assert steps.run_step(conn, moving, jobs, store, {"action": "finish", "run_id": run_id})["status"] == "switched"


def test_writers_embed_in_the_database_s_model_and_a_write_in_the_old_one_after_the_switch_is_rolled_back(
    conn: Any, own_database: str, tmp_path: Path
) -> None:
    from rag.backfill.stages import run_named_stage
    from rag.embedding import get_embedder
    from rag.store.embedding_space import ModelSwitched, active_embedder

    moving = settings_for(own_database, tmp_path, reembed_provider="local", reembed_runtime="onnx-int8")
    source = get_embedder(settings_for(own_database, tmp_path))
    ingest(conn, BUDGET_REVIEW, source, check_model=True)
    assert active_model(conn) is None  # nothing recorded yet: the configured model is the database's
    assert active_embedder(conn, moving).model_id == SOURCE
    run_named_stage(conn, moving, "segment", 10)
    jobs, store = steps.jobs_for(moving)
    run_id = steps.run_step(conn, moving, jobs, store, {"action": "plan"})["run_id"]
    assert steps.run_step(conn, moving, jobs, store, {"action": "finish", "run_id": run_id})["status"] == "switched"

    target = active_embedder(conn, moving)
    assert target.model_id == TARGET
    with pytest.raises(ModelSwitched, match=TARGET):  # embedded in the old model before the switch, written after it
        ingest(conn, SCANNER_SYNC, source, project="late", check_model=True)
    assert conn.execute("SELECT count(*) FROM documents WHERE project_id = 'late'").fetchone()[0] == 0
    ingest(conn, SCANNER_SYNC, target, project="late", check_model=True)
    for stage in ("segment", "embed", "extract"):
        run_named_stage(conn, moving, stage, 10)
    assert set(models(conn, "chunks")) == set(models(conn, "segments")) == {TARGET}
    assert conn.execute("SELECT count(*) FROM segments WHERE embedding IS NULL").fetchone()[0] == 0


def test_searches_running_through_the_switch_all_succeed_each_in_one_model(conn: Any, own_database: str, tmp_path: Path) -> None:
    import threading

    from rag.embedding import get_embedder
    from rag.store.connection import connect

    source = get_embedder(settings_for(own_database, tmp_path))
    for project in ("orion", "atlas"):
        ingest(conn, SCANNER_SYNC, source, project)
    moving = settings_for(own_database, tmp_path, reembed_provider="local", reembed_runtime="onnx-int8")
    jobs, store = steps.jobs_for(moving)
    run_id = steps.run_step(conn, moving, jobs, store, {"action": "plan"})["run_id"]
    question = "when does the scanner rollout reach the warehouses?"
    results: list[tuple[str, int]] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def search_until_stopped() -> None:
        with connect(own_database) as mine:
            while not stop.is_set():
                try:
                    model = embedding_settings(mine, moving).embedding.model_id
                    results.append((model, len(semantic(mine, moving, question))))
                except BaseException as exc:  # noqa: BLE001 - every failure is the test's finding
                    errors.append(exc)
                    return

    searchers = [threading.Thread(target=search_until_stopped) for _ in range(3)]
    for thread in searchers:
        thread.start()
    try:
        finished = steps.run_step(conn, moving, jobs, store, {"action": "finish", "run_id": run_id})
        while len([r for r in results if r[0] == TARGET]) < 10 and not errors:
            stop.wait(0.05)
    finally:
        stop.set()
        for thread in searchers:
            thread.join(30)
    assert errors == [] and finished["status"] == "switched"
    assert {model for model, _ in results} == {SOURCE, TARGET}
    assert all(found == 3 for _, found in results), results  # no search came back empty across the swap
