from __future__ import annotations

import re
from pathlib import Path

import pytest

from rag.config import REPO_ROOT
from rag.store.migrations import (
    INDEX_BUILD_MAX_ROWS,
    MigrationChecksumError,
    VectorExtensionError,
    check_checksums,
    check_vector_extension,
    check_vector_version,
    discover,
    embedding_index_name,
    ensure_embedding_indexes_concurrently,
    migrate,
)

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


@pytest.fixture
def openai_indexes_dropped_after(db):
    """The OpenAI indexes a test creates go again: the session's database is shared, and every later
    migrate would keep them up to date."""
    yield
    for (name,) in db.execute("SELECT indexname FROM pg_indexes WHERE indexdef LIKE '%text-embedding-3-small%'").fetchall():
        db.execute(f'DROP INDEX IF EXISTS "{name}"')


def test_each_model_gets_its_own_partial_hnsw_index(db, openai_indexes_dropped_after):
    migrate(db, REPO_ROOT / "sql", {"openai/text-embedding-3-small": 1536})
    indexes = dict(db.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'chunks'").fetchall())
    local = indexes[embedding_index_name("chunks", MODEL, 384)]
    openai = indexes[embedding_index_name("chunks", "openai/text-embedding-3-small", 1536)]
    assert "USING hnsw (((embedding)::vector(384)) vector_cosine_ops) WITH (m='16', ef_construction='128')" in local
    assert f"WHERE (embedding_model = '{MODEL}'::text)" in local
    assert "vector(1536)" in openai
    assert "USING gin (search_tsv)" in indexes["chunks_search_tsv_idx"]
    assert "(tenant_id, project_id)" in indexes["chunks_tenant_project_idx"]


def test_one_model_at_two_sizes_is_two_spaces_each_with_its_own_index(db, openai_indexes_dropped_after):
    """Shortened OpenAI vectors are recorded under an id of their own: an index of the full size never meets them."""
    import numpy as np

    from rag.config import Settings
    from rag.parsing.model import Chunk, ParsedDocument
    from rag.store import documents as repo

    full = Settings(embedding_provider="openai", embedding_dimension=1536).embedding.model_id
    short = Settings(embedding_provider="openai", embedding_dimension=256).embedding.model_id
    assert (full, short) == ("openai/text-embedding-3-small", "openai/text-embedding-3-small@256")
    source = repo.SourceObject("t", "p", "b", "projects/p/short.txt", content_sha256="x")
    chunk = Chunk(index=0, text="we ship in March", start_char=0, end_char=16, token_count=4)
    repo.replace_document(db, source, repo.DocumentFields(), ParsedDocument(kind="document", format="text",
                          text=chunk.text), [chunk], [np.full(256, 1 / 16, dtype=np.float32)], short)  # fmt: skip

    # Both indexes build over the same table: each one's rows are its own size (one id would fail: 256 != 1536).
    migrate(db, REPO_ROOT / "sql", {full: 1536, short: 256})

    indexes = dict(db.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'chunks'").fetchall())
    assert "vector(1536)" in indexes[embedding_index_name("chunks", full, 1536)]
    assert (
        f"vector(256)) vector_cosine_ops) WITH (m='16', ef_construction='128') WHERE (embedding_model = '{short}'::text)"
        in (indexes[embedding_index_name("chunks", short, 256)])
    )


def test_a_badly_named_migration_file_is_refused(tmp_path: Path):
    (tmp_path / "1_init.sql").write_text("SELECT 1;")
    with pytest.raises(ValueError, match="NNNN_snake_case_name.sql"):
        discover(tmp_path)


def test_marker_free_tsvectors_replace_the_old_ones_and_postings_are_rebuilt(database_url: str, tmp_path: Path):
    """A database migrated before 0004, holding a chunk with markers, is re-indexed by it."""
    import psycopg
    from psycopg.conninfo import make_conninfo

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
            text = "The budget {disfmarker} again {vocalsound}"
            # The rows as the write path of that time left them (today's writes BM25 bookkeeping of sql/0009):
            # the chunk, then its postings and statistics by sql/0002's own statements.
            doc = conn.execute(
                "INSERT INTO documents (tenant_id, project_id, bucket, object_key, status)"
                " VALUES ('t', 'p', 'b', 'a.txt', 'raw_ingested') RETURNING id"
            ).fetchone()[0]
            conn.execute(
                "INSERT INTO chunks (document_id, tenant_id, project_id, chunk_index, content, token_count, start_char, end_char)"
                " VALUES (%s, 't', 'p', 0, %s, 5, 0, %s)", (doc, text, len(text))
            )  # fmt: skip
            postings = (REPO_ROOT / "sql" / "0002_keyword_index_and_query_log.sql").read_text()
            conn.execute(postings[postings.index("-- Postings and statistics for chunks ingested before") :])
            before = {row[0] for row in conn.execute("SELECT term FROM chunk_terms")}
            assert before == {"budget", "disfmark", "vocalsound"}  # "again" is an english stop word

            assert migrate(conn, REPO_ROOT / "sql", {MODEL: 384})[0] == "0004"

            # Since 0009 BM25 reads the tsvector itself (chunk_terms is gone) and the chunk's length.
            assert conn.execute("SELECT len, lexemes::text FROM chunk_lexemes").fetchall() == [(1, "'budget'")]
            assert conn.execute("SELECT chunk_count, total_len FROM keyword_stats").fetchall() == [(1, 1)]
            assert conn.execute("SELECT search_tsv::text FROM chunks").fetchone() == ("'budget':2",)
    finally:
        with psycopg.connect(database_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# The BM25 read side before 0009: postings in chunk_terms (the engine's statement as it was then).
_POSTINGS_BM25_BEFORE_0009 = """{query_terms},
    term_df AS (
        SELECT ct.project_id, ct.term, count(*)::float8 AS df
        FROM chunk_terms ct JOIN query_terms q ON q.term = ct.term
        WHERE ct.tenant_id = %(tenant)s {projects}
        GROUP BY ct.project_id, ct.term),
    keyword AS (
        SELECT id, score, row_number() OVER (ORDER BY score DESC, id) AS rank FROM (
            SELECT ct.chunk_id AS id,
                   sum(ln(1.0::float8 + (ks.chunk_count - df.df + 0.5::float8) / (df.df + 0.5::float8))
                       * ct.tf * (1.2::float8 + 1.0::float8)
                       / (ct.tf + 1.2::float8 * (1.0::float8 - 0.75::float8
                          + 0.75::float8 * ct.chunk_len / greatest(ks.total_len::float8 / greatest(ks.chunk_count, 1), 1.0::float8)))
                   ) AS score
            FROM chunk_terms ct
            JOIN term_df df ON df.project_id = ct.project_id AND df.term = ct.term
            JOIN keyword_stats ks ON ks.tenant_id = ct.tenant_id AND ks.project_id = ct.project_id
            JOIN {table} c ON c.id = ct.chunk_id {join_documents}
            WHERE ct.tenant_id = %(tenant)s AND {where}
            GROUP BY ct.chunk_id
            ORDER BY score DESC, ct.chunk_id LIMIT %(candidates)s) k)"""


def test_0009_moves_bm25_to_the_tsvectors_of_a_database_with_chunks(database_url: str, tmp_path: Path, monkeypatch):
    """A database with chunks and chunk_terms postings: 0009 rebuilds lengths and stats, drops the
    postings, and every keyword search ranks the same chunks with the same scores as before."""
    import numpy as np
    import psycopg
    from psycopg.conninfo import make_conninfo

    from rag.search import bm25
    from rag.search.engine import SearchScope, search_chunks
    from rag.store.connection import connect

    for migration in discover(REPO_ROOT / "sql"):
        if migration.version < "0009":
            (tmp_path / migration.path.name).write_bytes(migration.path.read_bytes())
    words = "battery supplier march budget remote button chime plastic launch risk price retail logo charger the and".split()
    name = f"{psycopg.conninfo.conninfo_to_dict(database_url)['dbname']}_bm25"
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        with connect(make_conninfo(database_url, dbname=name), register=False) as conn:
            migrate(conn, tmp_path, {})
            rng = np.random.default_rng(3)
            for d, project in enumerate(["p", "p", "p", "q", "q"]):
                doc = conn.execute(
                    "INSERT INTO documents (tenant_id, project_id, bucket, object_key, status)"
                    " VALUES ('t', %s, 'b', %s, 'raw_ingested') RETURNING id", (project, f"d{d}")
                ).fetchone()[0]  # fmt: skip
                for i in range(30):
                    text = " ".join(rng.choice(words, size=int(rng.integers(1, 25))))
                    conn.execute(
                        "INSERT INTO chunks (document_id, tenant_id, project_id, chunk_index, content, token_count,"
                        " start_char, end_char) VALUES (%s, 't', %s, %s, %s, 1, 0, 0)", (doc, project, i, text)
                    )  # fmt: skip
            # The postings and statistics as the write path kept them before 0009 (sql/0004's rebuild).
            rebuild = (REPO_ROOT / "sql" / "0004_index_text_without_transcript_markers.sql").read_text()
            conn.execute(rebuild[rebuild.index("TRUNCATE chunk_terms") :])
            doc_p = conn.execute("SELECT id::text FROM documents WHERE object_key = 'd1'").fetchone()[0]
            scopes = [SearchScope("t", ("p",)), SearchScope("t"), SearchScope("t", ("p",), document_ids=(doc_p,))]
            queries = ["battery price", "the chime and the retail logo", "march", "nothing matches"]

            def results() -> list[dict[int, float]]:
                return [
                    {h.id: h.score for h in search_chunks(conn, scope, mode="keyword", query=query, query_vector=None,
                                                          model_id=MODEL, dimension=384, top_k=1000)}
                    for scope in scopes for query in queries
                ]  # fmt: skip

            def old_cte(table: str, where: str, join_documents: str) -> str:
                projects = "AND ct.project_id = ANY(%(projects)s)" if "%(projects)s" in where else ""
                return _POSTINGS_BM25_BEFORE_0009.format(
                    query_terms=bm25.QUERY_TERMS, projects=projects, table=table, where=where, join_documents=join_documents
                )

            with monkeypatch.context() as patched:
                patched.setitem(bm25.KEYWORD_CTES, "project_stats_bm25", old_cte)
                before = results()
            stats_before = conn.execute("SELECT * FROM keyword_stats ORDER BY 1, 2").fetchall()

            assert "0009" in migrate(conn, REPO_ROOT / "sql", {})

            assert conn.execute("SELECT to_regclass('chunk_terms')").fetchone() == (None,)
            assert conn.execute("SELECT * FROM keyword_stats ORDER BY 1, 2").fetchall() == stats_before
            after = results()
            assert any(before) and [set(r) for r in after] == [set(r) for r in before]
            for new, old in zip(after, before):
                assert new == pytest.approx(old, rel=1e-12)
            # Idempotent: run again, the same lengths and statistics.
            lengths = conn.execute("SELECT * FROM chunk_lexemes ORDER BY 1").fetchall()
            conn.execute((REPO_ROOT / "sql" / "0009_bm25_from_chunk_tsvectors.sql").read_text())
            assert conn.execute("SELECT * FROM chunk_lexemes ORDER BY 1").fetchall() == lengths
            assert conn.execute("SELECT * FROM keyword_stats ORDER BY 1, 2").fetchall() == stats_before
    finally:
        with psycopg.connect(database_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# --- checksums of applied migrations -----------------------------------------------------------------------------


def test_unchanged_applied_migrations_pass_the_checksum_check(tmp_path: Path):
    (tmp_path / "0001_one.sql").write_text("SELECT 1;")
    migrations = discover(tmp_path)
    check_checksums(migrations, {"0001": migrations[0].checksum})
    check_checksums(migrations, {})  # nothing applied yet


def test_an_edited_applied_migration_is_named_with_both_checksums(tmp_path: Path):
    (tmp_path / "0001_one.sql").write_text("SELECT 1;")
    (tmp_path / "0002_two.sql").write_text("SELECT 2;")
    migrations = discover(tmp_path)
    recorded = {"0001": migrations[0].checksum, "0002": "0" * 64}
    with pytest.raises(MigrationChecksumError) as error:
        check_checksums(migrations, recorded)
    message = str(error.value)
    assert "0002_two.sql" in message and "0001_one.sql" not in message
    assert f"recorded checksum {'0' * 64}, current checksum {migrations[1].checksum}" in message
    assert "new migration" in message


def test_migrate_refuses_an_edited_applied_migration_and_applies_nothing(scratch_database: str, tmp_path: Path):
    from rag.store.connection import connect

    first = tmp_path / "0001_first.sql"
    first.write_text("CREATE TABLE first_table (id int);")
    with connect(scratch_database, register=False) as conn:
        # GIVEN a database that applied 0001
        assert migrate(conn, tmp_path, {}) == ["0001"]
        recorded = conn.execute("SELECT checksum FROM schema_migrations WHERE version = '0001'").fetchone()[0]

        # WHEN 0001 is edited in place and a new migration is added
        first.write_text("CREATE TABLE first_table (id int, extra text);")
        (tmp_path / "0002_second.sql").write_text("CREATE TABLE second_table (id int);")

        # THEN migrate refuses, naming the file, both checksums and the fix, and applies nothing
        current = discover(tmp_path)[0].checksum
        expected = rf"0001_first\.sql .*recorded checksum {recorded}, current checksum {current}.*new migration"
        with pytest.raises(MigrationChecksumError, match=expected):
            migrate(conn, tmp_path, {})
        assert conn.execute("SELECT to_regclass('second_table')").fetchone() == (None,)
        assert [r[0] for r in conn.execute("SELECT version FROM schema_migrations")] == ["0001"]

        # WHEN the edit is undone, THEN the new migration applies
        first.write_text("CREATE TABLE first_table (id int);")
        assert migrate(conn, tmp_path, {}) == ["0002"]


# --- pgvector's version ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["0.8.0", "0.8.1", "0.8.6", "0.10.0", "1.0.0"])
def test_pgvector_0_8_0_or_newer_passes(version: str):
    assert check_vector_version(version, installed=True) == version


@pytest.mark.parametrize(
    ("version", "installed", "advice"),
    [
        ("0.7.4", True, "ALTER EXTENSION vector UPDATE"),
        ("0.5.1", False, "upgrade the server"),
        ("0.7", True, "ALTER EXTENSION vector UPDATE"),
    ],
)
def test_an_older_pgvector_is_refused_naming_the_minimum(version: str, installed: bool, advice: str):
    expected = rf"pgvector {version} .* needs pgvector >= 0\.8\.0 \(iterative index scans"
    with pytest.raises(VectorExtensionError, match=expected) as error:
        check_vector_version(version, installed=installed)
    assert advice in str(error.value)


def test_a_server_without_pgvector_is_refused():
    with pytest.raises(VectorExtensionError, match="not available on this server.*>= 0.8.0"):
        check_vector_version(None, installed=False)


def test_the_real_server_passes_and_its_version_is_checked(db):
    installed = db.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
    assert check_vector_extension(db) == installed
    expected = rf"pgvector {re.escape(installed)} is installed; rag needs pgvector >= 99\.0\.0"
    with pytest.raises(VectorExtensionError, match=expected):
        check_vector_extension(db, minimum="99.0.0")


def test_migrate_refuses_an_old_pgvector_before_changing_anything(scratch_database: str, monkeypatch):
    from rag.store import migrations
    from rag.store.connection import connect

    # GIVEN a server whose pgvector (0.8.x here) is older than what migrate requires
    monkeypatch.setattr(migrations, "MIN_VECTOR_VERSION", "99.0.0")
    with connect(scratch_database, register=False) as conn:
        # WHEN migrate runs, THEN it fails naming the minimum, and the database is untouched
        with pytest.raises(VectorExtensionError, match=r"would install; rag needs pgvector >= 99\.0\.0"):
            migrate(conn, REPO_ROOT / "sql", {MODEL: 384})
        assert conn.execute("SELECT to_regclass('schema_migrations')").fetchone() == (None,)
        assert conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'vector'").fetchone() == (0,)


# --- vector indexes on large tables --------------------------------------------------------------------------------

SMALL_MODEL = "test/three-dims"


def _embedded_table(conn, rows: int) -> None:
    """A ``chunks`` table (just the columns the index uses) holding ``rows`` vectors of SMALL_MODEL."""
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    conn.execute("CREATE TABLE chunks (id bigserial PRIMARY KEY, embedding_model text NOT NULL, embedding vector)")
    conn.execute(
        "INSERT INTO chunks (embedding_model, embedding)"
        " SELECT %s, ARRAY[random(), random(), random()]::vector FROM generate_series(1, %s)",
        (SMALL_MODEL, rows),
    )


def _index_state(conn, name: str):
    row = conn.execute("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)", (name,)).fetchone()
    return None if row is None else row[0]


def test_migrate_leaves_a_large_tables_index_to_the_concurrent_builder(scratch_database: str, tmp_path: Path):
    from rag.store.connection import connect

    name = embedding_index_name("chunks", SMALL_MODEL, 3)
    with connect(scratch_database, register=False) as conn:
        # GIVEN a table with more rows of the model than the threshold (10,000)
        assert INDEX_BUILD_MAX_ROWS == 10_000
        _embedded_table(conn, INDEX_BUILD_MAX_ROWS + 1)

        # WHEN migrate runs (one transaction, a deploy's time limit), THEN it builds no index there
        assert migrate(conn, tmp_path, {SMALL_MODEL: 3}) == []
        assert _index_state(conn, name) is None

        # WHEN the concurrent builder runs, THEN the index exists and is valid, and a second run does nothing
        assert ensure_embedding_indexes_concurrently(conn, {SMALL_MODEL: 3}) == [name]
        assert _index_state(conn, name) is True
        assert "USING hnsw" in conn.execute("SELECT pg_get_indexdef(to_regclass(%s))", (name,)).fetchone()[0]
        assert ensure_embedding_indexes_concurrently(conn, {SMALL_MODEL: 3}) == []


def test_migrate_still_builds_an_index_up_to_the_threshold(scratch_database: str, tmp_path: Path):
    from rag.store.connection import connect

    with connect(scratch_database, register=False) as conn:
        _embedded_table(conn, 50)
        migrate(conn, tmp_path, {SMALL_MODEL: 3}, index_build_max_rows=50)
        assert _index_state(conn, embedding_index_name("chunks", SMALL_MODEL, 3)) is True


def test_an_index_left_invalid_by_an_interrupted_build_is_built_again(scratch_database: str, tmp_path: Path):
    from rag.store.connection import connect

    name = embedding_index_name("chunks", SMALL_MODEL, 3)
    with connect(scratch_database, register=False) as conn:
        _embedded_table(conn, 200)
        migrate(conn, tmp_path, {SMALL_MODEL: 3}, index_build_max_rows=100)
        assert ensure_embedding_indexes_concurrently(conn, {SMALL_MODEL: 3}) == [name]
        # What a CREATE INDEX CONCURRENTLY cut short (a timeout, a lost connection) leaves behind
        conn.execute("UPDATE pg_index SET indisvalid = false WHERE indexrelid = to_regclass(%s)", (name,))
        assert _index_state(conn, name) is False

        assert ensure_embedding_indexes_concurrently(conn, {SMALL_MODEL: 3}) == [name]
        assert _index_state(conn, name) is True


def test_the_concurrent_builder_refuses_a_connection_inside_a_transaction(db):
    db.autocommit = False
    try:
        with pytest.raises(ValueError, match="autocommit"):
            ensure_embedding_indexes_concurrently(db, {MODEL: 384})
    finally:
        db.rollback()
        db.autocommit = True
