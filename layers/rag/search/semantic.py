"""Semantic search: cosine similarity over one model's vectors, tenant- and project-filtered.

pgvector 0.8's iterative index scan keeps a selective filter from starving the top-k
(plain post-filtered HNSW returns too few rows when a project holds a small share).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psycopg

    from rag.embedding.base import Embedder


@dataclass(frozen=True)
class ChunkHit:
    chunk_id: int
    document_id: str
    project_id: str
    similarity: float
    content: str
    source_uri: str
    title: str | None
    start_char: int
    end_char: int
    start_turn: int | None
    end_turn: int | None
    speakers: list[str]


def semantic_search(
    conn: psycopg.Connection,
    embedder: Embedder,
    *,
    tenant_id: str,
    query: str,
    project_ids: list[str] | None = None,
    top_k: int = 10,
) -> list[ChunkHit]:
    from pgvector import Vector

    vector = Vector(embedder.embed([query])[0])
    dim = int(embedder.dimension)
    project_filter = "AND c.project_id = ANY(%(projects)s)" if project_ids else ""
    with conn.transaction():
        conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        # A generic plan cannot match the per-model partial index: always plan with the values.
        conn.execute("SET LOCAL plan_cache_mode = force_custom_plan")
        rows = conn.execute(
            f"""SELECT c.id, c.document_id::text, c.project_id, 1 - c.distance, c.content, d.source_uri, d.title,
                       c.start_char, c.end_char, c.start_turn, c.end_turn, c.speakers
                FROM (SELECT *, embedding::vector({dim}) <=> %(q)s::vector({dim}) AS distance
                      FROM chunks c
                      WHERE c.tenant_id = %(tenant)s AND c.embedding_model = %(model)s {project_filter}
                      ORDER BY distance LIMIT %(k)s) c
                JOIN documents d ON d.id = c.document_id
                ORDER BY c.distance""",
            {"q": vector, "tenant": tenant_id, "model": embedder.model_id, "projects": project_ids, "k": top_k},
        ).fetchall()
    return [ChunkHit(*row) for row in rows]
