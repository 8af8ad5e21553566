from __future__ import annotations

from pathlib import Path

import pytest

from rag.config import REPO_ROOT
from rag.store.migrations import discover, embedding_index_name, migrate

MODEL = "local/all-MiniLM-L6-v2"


def test_migrations_are_numbered_and_applied_in_order():
    versions = [m.version for m in discover(REPO_ROOT / "sql")]
    assert versions == sorted(versions) and versions[0] == "0001"


def test_rerunning_migrations_is_a_no_op_and_each_is_recorded(db):
    before = db.execute("SELECT version, checksum, applied_at FROM schema_migrations ORDER BY version").fetchall()

    assert migrate(db, REPO_ROOT / "sql", {MODEL: 384}) == []

    after = db.execute("SELECT version, checksum, applied_at FROM schema_migrations ORDER BY version").fetchall()
    assert after == before
    assert [row[0] for row in after] == [m.version for m in discover(REPO_ROOT / "sql")]


def test_each_model_gets_its_own_partial_hnsw_index(db):
    migrate(db, REPO_ROOT / "sql", {"openai/text-embedding-3-small": 1536})
    indexes = dict(db.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'chunks'").fetchall())
    local = indexes[embedding_index_name("chunks", MODEL, 384)]
    openai = indexes[embedding_index_name("chunks", "openai/text-embedding-3-small", 1536)]
    assert "USING hnsw (((embedding)::vector(384)) vector_cosine_ops)" in local
    assert f"WHERE (embedding_model = '{MODEL}'::text)" in local
    assert "vector(1536)" in openai
    assert "USING gin (search_tsv)" in indexes["chunks_search_tsv_idx"]
    assert "(tenant_id, project_id)" in indexes["chunks_tenant_project_idx"]


def test_a_badly_named_migration_file_is_refused(tmp_path: Path):
    (tmp_path / "1_init.sql").write_text("SELECT 1;")
    with pytest.raises(ValueError, match="NNNN_snake_case_name.sql"):
        discover(tmp_path)
