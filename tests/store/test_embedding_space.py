"""embedding_space: the model a database's vectors are in, recorded from its data by the migration that adds it."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest

from rag.config import REPO_ROOT, Settings
from rag.store.embedding_space import ModelSwitched, active_model, embedding_settings, record_model, require_model


def migrations_up_to(version: str, folder: Path) -> Path:
    folder.mkdir()
    for path in sorted((REPO_ROOT / "sql").glob("*.sql")):
        if path.name[:4] <= version:
            shutil.copy(path, folder / path.name)
    return folder


def insert_document(conn: Any, model: str, dimension: int, chunks: int) -> None:
    document = conn.execute(
        """INSERT INTO documents (tenant_id, project_id, bucket, object_key, status, embedding_model, body)
           VALUES ('t', 'p', 'b', %s, 'embedded', %s, 'text') RETURNING id""",
        (f"k-{uuid.uuid4().hex}", model),
    ).fetchone()[0]
    for index in range(chunks):
        conn.execute(
            """INSERT INTO chunks (document_id, tenant_id, project_id, chunk_index, content, token_count, start_char,
                                   end_char, embedding, embedding_model)
               VALUES (%s, 't', 'p', %s, 'text', 1, 0, 4, %s::vector, %s)""",
            (document, index, str([0.5] * dimension), model),
        )


def test_the_migration_records_the_model_most_documents_are_in(scratch_database: str, tmp_path: Path) -> None:
    from rag.store.connection import connect
    from rag.store.migrations import migrate

    with connect(scratch_database, register=False) as conn:
        migrate(conn, migrations_up_to("0012", tmp_path / "before"), {})
        insert_document(conn, "openai/text-embedding-3-small@256", 256, 2)
        insert_document(conn, "local/all-MiniLM-L6-v2", 384, 1)
        insert_document(conn, "local/all-MiniLM-L6-v2", 384, 1)
        migrate(conn, REPO_ROOT / "sql", {})
        assert active_model(conn) == ("local/all-MiniLM-L6-v2", 384)
        assert record_model(conn, "openai/other", 8) == ("local/all-MiniLM-L6-v2", 384)  # recorded once, kept


def test_an_scratch_database_records_nothing_until_asked(scratch_database: str) -> None:
    from rag.store.connection import connect
    from rag.store.migrations import migrate

    with connect(scratch_database, register=False) as conn:
        migrate(conn, REPO_ROOT / "sql", {})
        assert active_model(conn) is None
        require_model(conn, "any/model")  # nothing recorded: no switch to miss
        moving = Settings(database_url=scratch_database, reembed_provider="local", reembed_runtime="onnx-int8")
        assert embedding_settings(conn, moving).embedding.model_id == "local/all-MiniLM-L6-v2"
        assert record_model(conn, "local/all-MiniLM-L6-v2-int8", 384) == ("local/all-MiniLM-L6-v2-int8", 384)
        assert embedding_settings(conn, moving).embedding.model_id == "local/all-MiniLM-L6-v2-int8"
        with pytest.raises(ModelSwitched, match="all-MiniLM-L6-v2-int8"):
            require_model(conn, "local/all-MiniLM-L6-v2")
        unmoved = Settings(database_url=scratch_database)  # no move configured: the table is not read
        assert embedding_settings(conn, unmoved) is unmoved
