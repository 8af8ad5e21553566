"""The embed stage (segmented -> embedded): vectors of the configured model for chunks and segments.

Chunks already embedded with the configured model at ingest are left alone; chunks of
another model (after a switch of ``RAG_EMBEDDING_*``) are re-embedded in place. Each
segment is embedded as ``Topic: <title>\\n<summary>``. Searches filter on
``embedding_model``, so while a switch runs they never compare vectors of two models:
a document answers the new model's searches once this stage has moved it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rag.backfill.documents import ClaimedDocument

if TYPE_CHECKING:
    import psycopg

    from rag.embedding.base import Embedder


class EmbedStage:
    name = "embed"

    def __init__(self, embedder: Embedder):
        self.embedder = embedder
        self.model_id = embedder.model_id

    def process(self, conn: psycopg.Connection, document: ClaimedDocument) -> None:
        model = self.model_id
        scope = (document.id, document.tenant_id, model)
        chunks = conn.execute(
            """SELECT id, content FROM chunks
               WHERE document_id = %s AND tenant_id = %s AND (embedding IS NULL OR embedding_model IS DISTINCT FROM %s)
               ORDER BY chunk_index""",
            scope,
        ).fetchall()
        segments = conn.execute(
            """SELECT id, 'Topic: ' || title || E'\\n' || summary FROM segments
               WHERE document_id = %s AND tenant_id = %s AND (embedding IS NULL OR embedding_model IS DISTINCT FROM %s)
               ORDER BY segment_index""",
            scope,
        ).fetchall()
        texts = [text for _, text in chunks] + [text for _, text in segments]
        vectors = self.embedder.embed(texts) if texts else []  # one batched call for the document
        set_vectors(conn, "chunks", document, [id_ for id_, _ in chunks], vectors[: len(chunks)], model)
        set_vectors(conn, "segments", document, [id_ for id_, _ in segments], vectors[len(chunks) :], model)
        conn.execute(
            "UPDATE documents SET embedding_model = %s WHERE id = %s AND tenant_id = %s",
            (model, document.id, document.tenant_id),
        )


def set_vectors(
    conn: psycopg.Connection, table: str, document: ClaimedDocument, ids: list[int], vectors: list, model: str
) -> None:
    """One UPDATE for all rows of ``table`` (ids and vectors as arrays)."""
    if not ids:
        return
    from pgvector import Vector

    conn.execute(
        f"""UPDATE {table} AS t SET embedding = v.embedding, embedding_model = %s
            FROM unnest(%s::bigint[], %s::vector[]) AS v(id, embedding)
            WHERE t.id = v.id AND t.document_id = %s AND t.tenant_id = %s""",  # noqa: S608 - table is a constant
        (model, ids, [Vector(list(v)) for v in vectors], document.id, document.tenant_id),
    )
