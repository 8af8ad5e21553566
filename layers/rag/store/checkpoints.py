"""Embedding progress of a file too large for one invocation (``ingest_checkpoints``, sql/0006)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg

    from rag.store.documents import SourceObject


def load(conn: psycopg.Connection, source: SourceObject, model_id: str) -> dict[int, Any]:
    """chunk index -> vector saved by earlier invocations for this exact content and model."""
    rows = conn.execute(
        """SELECT chunk_index, embedding FROM ingest_checkpoints
           WHERE bucket = %s AND object_key = %s AND content_sha256 = %s AND embedding_model = %s""",
        (source.bucket, source.key, source.content_sha256, model_id),
    ).fetchall()
    return {index: vector for index, vector in rows}


def save(conn: psycopg.Connection, source: SourceObject, model_id: str, vectors: Mapping[int, Sequence[float]]) -> None:
    """Keep ``vectors`` (chunk index -> vector) for the next invocation; older content's rows go."""
    from rag.store.documents import vector_value

    with conn.transaction():
        conn.execute(
            "DELETE FROM ingest_checkpoints WHERE bucket = %s AND object_key = %s AND content_sha256 <> %s",
            (source.bucket, source.key, source.content_sha256),
        )
        with (
            conn.cursor() as cur,
            cur.copy(
                "COPY ingest_checkpoints (bucket, object_key, content_sha256, embedding_model, chunk_index, embedding)"
                " FROM STDIN WITH (FORMAT BINARY)"
            ) as copy,
        ):
            copy.set_types(("text", "text", "text", "text", "int4", "vector"))
            for index, vector in vectors.items():
                copy.write_row((source.bucket, source.key, source.content_sha256, model_id, index, vector_value(vector)))


def clear(conn: psycopg.Connection, bucket: str, key: str) -> None:
    """Forget the object's saved progress (its document is written, or it is gone)."""
    conn.execute("DELETE FROM ingest_checkpoints WHERE bucket = %s AND object_key = %s", (bucket, key))
