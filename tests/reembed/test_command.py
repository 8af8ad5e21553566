"""``rag reembed`` runs a whole move on the local model and reports it; ``--status`` reads where the database is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rag.store.embedding_space import active_model
from tests.backfill.conftest import BUDGET_REVIEW
from tests.reembed.test_switch import SOURCE, TARGET, ingest


def rag(*argv: str) -> int:
    from rag_local.cli import main

    return main(list(argv))


def test_rag_reembed_moves_the_database_and_says_what_it_did(
    conn: Any, own_database: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from rag.config import Settings, get_settings
    from rag.embedding import get_embedder

    monkeypatch.setenv("DATABASE_URL", own_database)
    monkeypatch.setenv("RAG_REEMBED_LOCAL_DIR", str(tmp_path))
    get_settings.cache_clear()
    ingest(conn, BUDGET_REVIEW, get_embedder(Settings(embedding_provider="local")))

    assert rag("reembed") == 1
    assert "name the target model" in capsys.readouterr().err
    assert rag("reembed", "--to-provider", "local", "--to-runtime", "onnx-int8") == 0
    said = capsys.readouterr().out
    assert "0 manifests" in said and f"switched to {TARGET}" in said  # too few rows for a batch job: all online
    assert said.rstrip().endswith(
        "set RAG_EMBEDDING_PROVIDER=local RAG_EMBEDDING_MODEL=all-MiniLM-L6-v2 RAG_EMBEDDING_DIMENSION=384"
        " RAG_EMBEDDING_RUNTIME=onnx-int8"
    )
    switched = Settings(embedding_provider="local", embedding_runtime="onnx-int8")  # what it says, as settings
    assert get_embedder(switched).model_id == TARGET
    assert active_model(conn) == (TARGET, 384)
    assert rag("reembed", "--to-provider", "local", "--to-runtime", "onnx-int8") == 0
    assert "nothing to do" in capsys.readouterr().out
    assert rag("reembed", "--status") == 0
    status = json.loads(capsys.readouterr().out)
    assert status["model"] == TARGET and status["run"]["state"] == "switched" and status["run"]["source"] == SOURCE
    get_settings.cache_clear()
