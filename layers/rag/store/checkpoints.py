"""Embedding progress of a file too large for one invocation (``ingest_checkpoints``, sql/0006).

Two chains of invocations can work on one file at once (S3 delivers an event twice, or a batch
times out after its continuation was sent and the original message comes back): saving is
idempotent, so they share their progress; and a chain clears only what it is entitled to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg

    from rag.store.documents import SourceObject

_COLUMNS = "bucket, object_key, content_sha256, embedding_model, chunk_index, embedding"


def load(conn: psycopg.Connection, source: SourceObject, model_id: str) -> dict[int, Any]:
    """chunk index -> vector saved by earlier invocations for this exact content and model."""
    rows = conn.execute(
        """SELECT chunk_index, embedding FROM ingest_checkpoints
           WHERE bucket = %s AND object_key = %s AND content_sha256 = %s AND embedding_model = %s""",
        (source.bucket, source.key, source.content_sha256, model_id),
    ).fetchall()
    return {index: vector for index, vector in rows}


def save(conn: psycopg.Connection, source: SourceObject, model_id: str, vectors: Mapping[int, Sequence[float]]) -> None:
    """Keep ``vectors`` (chunk index -> vector) for the next invocation; rows another chain saved first stay.

    Binary COPY into a temporary table, then one INSERT that skips the rows already there (the
    same content and model give the same vectors). Rows of other content are left alone: this
    invocation may be the stale one, and the current version's chain needs them; the write of
    the current version clears them (``clear``).
    """
    from rag.store.documents import vector_value

    with conn.transaction():
        conn.execute("CREATE TEMP TABLE ingest_checkpoints_incoming (LIKE ingest_checkpoints INCLUDING DEFAULTS) ON COMMIT DROP")
        with (
            conn.cursor() as cur,
            cur.copy(f"COPY ingest_checkpoints_incoming ({_COLUMNS}) FROM STDIN WITH (FORMAT BINARY)") as copy,
        ):
            copy.set_types(("text", "text", "text", "text", "int4", "vector"))
            for index, vector in vectors.items():
                copy.write_row((source.bucket, source.key, source.content_sha256, model_id, index, vector_value(vector)))
        conn.execute(
            f"INSERT INTO ingest_checkpoints ({_COLUMNS}) SELECT {_COLUMNS} FROM ingest_checkpoints_incoming"
            " ON CONFLICT DO NOTHING"
        )


def clear(conn: psycopg.Connection, bucket: str, key: str, *, content_sha256: str | None = None) -> None:
    """Forget the object's saved progress: all of it (its current version is written, or it is gone), or
    only that of ``content_sha256`` (that content failed; another version's chain keeps its progress)."""
    if content_sha256 is None:
        conn.execute("DELETE FROM ingest_checkpoints WHERE bucket = %s AND object_key = %s", (bucket, key))
    else:
        conn.execute(
            "DELETE FROM ingest_checkpoints WHERE bucket = %s AND object_key = %s AND content_sha256 = %s",
            (bucket, key, content_sha256),
        )
