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


def test_marker_free_tsvectors_replace_the_old_ones_and_postings_are_rebuilt(database_url: str, tmp_path: Path):
    """A database migrated before 0004, holding a chunk with markers, is re-indexed by it."""
    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg.conninfo import make_conninfo

    from rag.parsing.model import Chunk, ParsedDocument
    from rag.store import documents as repo
    from rag.store.connection import connect

    for migration in discover(REPO_ROOT / "sql"):
        if migration.version < "0004":
            (tmp_path / migration.path.name).write_bytes(migration.path.read_bytes())
    name = f"{psycopg.conninfo.conninfo_to_dict(database_url)['dbname']}_upgrade"
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        with connect(make_conninfo(database_url, dbname=name), register=False) as conn:
            migrate(conn, tmp_path, {MODEL: 384})
            register_vector(conn)
            text = "The budget {disfmarker} again {vocalsound}"
            source = repo.SourceObject("t", "p", "b", "a.txt", content_sha256="x")
            chunk = Chunk(index=0, text=text, start_char=0, end_char=len(text), token_count=5)
            parsed = ParsedDocument("document", "text", text)
            repo.replace_document(conn, source, repo.DocumentFields(), parsed, [chunk], [[1.0] + [0.0] * 383], MODEL)
            before = {row[0] for row in conn.execute("SELECT term FROM chunk_terms")}
            assert before == {"budget", "disfmark", "vocalsound"}  # "again" is an english stop word

            assert migrate(conn, REPO_ROOT / "sql", {MODEL: 384})[0] == "0004"

            assert {row[0] for row in conn.execute("SELECT term FROM chunk_terms")} == {"budget"}
            assert conn.execute("SELECT chunk_count, total_len FROM keyword_stats").fetchall() == [(1, 1)]
            assert conn.execute("SELECT search_tsv::text FROM chunks").fetchone() == ("'budget':2",)
    finally:
        with psycopg.connect(database_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
