"""The embed stage (segmented -> embedded): vectors of the configured model for chunks and segments.

Chunks already embedded with the configured model at ingest are left alone; chunks of
another model (after a switch of ``RAG_EMBEDDING_*``) are re-embedded in place. A
segment's vector is the token-weighted mean of the vectors of its own text, cut into
pieces the model reads whole (runs of turns or paragraphs): it stands for everything
said in the segment, as its tsvector does (sql/0007), where a vector of its title and
summary would stand for a few of its sentences, and the chunks it overlaps would bring
in the neighbouring topics. A segment without text is embedded as
``Topic: <title>\\n<summary>``. Searches filter on
``embedding_model``, so while a switch runs they never compare vectors of two models:
a document answers the new model's searches once this stage has moved it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rag.backfill.documents import ClaimedDocument
from rag.embedding.pieces import segment_pieces, segment_vector

if TYPE_CHECKING:
    import psycopg

    from rag.embedding.base import Embedder
    from rag.store.backfill_queue import StageName


class EmbedStage:
    name: StageName = "embed"

    def __init__(self, embedder: Embedder):
        self.embedder = embedder
        self.model_id = embedder.model_id

    def segment_pieces(self, document: ClaimedDocument, start: int, end: int) -> list[tuple[str, int]]:
        return segment_pieces(document.body, start, end, self.embedder)

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
            """SELECT id, start_char, end_char, 'Topic: ' || title || E'\\n' || summary FROM segments
               WHERE document_id = %s AND tenant_id = %s AND (embedding IS NULL OR embedding_model IS DISTINCT FROM %s)
               ORDER BY segment_index""",
            scope,
        ).fetchall()
        pieces = [self.segment_pieces(document, start, end) or [(topic, 1)] for _, start, end, topic in segments]
        texts = [text for _, text in chunks] + [text for piece in pieces for text, _ in piece]
        vectors = self.embedder.embed(texts) if texts else []  # one batched call for the document
        set_vectors(conn, "chunks", document, [id_ for id_, _ in chunks], vectors[: len(chunks)], model)
        segment_vectors, position = [], len(chunks)
        for piece in pieces:
            segment_vectors.append(segment_vector(vectors[position : position + len(piece)], [w for _, w in piece]))
            position += len(piece)
        set_vectors(conn, "segments", document, [row[0] for row in segments], segment_vectors, model)
        conn.execute(
            "UPDATE documents SET embedding_model = %s WHERE id = %s AND tenant_id = %s",
            (model, document.id, document.tenant_id),
        )


def set_vectors(
    conn: psycopg.Connection,
    table: str,
    document: ClaimedDocument,
    ids: list[int],
    vectors: Sequence[Sequence[float]],
    model: str,
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
