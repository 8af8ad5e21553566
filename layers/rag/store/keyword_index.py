"""Maintains the BM25 postings (``chunk_terms``) and per-project statistics (``keyword_stats``).

Postings come from each chunk's english tsvector, so ingest and search stem and drop
stop words exactly as PostgreSQL's full-text search does. Called inside the
transaction that writes or deletes the chunks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

if TYPE_CHECKING:
    import psycopg


def index_document(conn: psycopg.Connection, document_id: UUID) -> None:
    """Add the postings of the document's chunks and count them into the project's stats."""
    conn.execute(
        """INSERT INTO chunk_terms (tenant_id, project_id, term, chunk_id, document_id, tf, chunk_len)
           SELECT c.tenant_id, c.project_id, t.lexeme, c.id, c.document_id, cardinality(t.positions),
                  sum(cardinality(t.positions)) OVER (PARTITION BY c.id)
           FROM chunks c CROSS JOIN LATERAL unnest(c.search_tsv) AS t
           WHERE c.document_id = %s""",
        (document_id,),
    )
    _add_stats(conn, document_id, sign=1)


def unindex_document(conn: psycopg.Connection, document_id: UUID) -> None:
    """Subtract the document's chunks from the stats (the postings go with the chunks)."""
    _add_stats(conn, document_id, sign=-1)


def _add_stats(conn: psycopg.Connection, document_id: UUID, sign: int) -> None:
    conn.execute(
        """INSERT INTO keyword_stats AS s (tenant_id, project_id, chunk_count, total_len)
           SELECT tenant_id, project_id, %(sign)s * count(DISTINCT chunk_id), %(sign)s * sum(tf)
           FROM chunk_terms WHERE document_id = %(doc)s GROUP BY tenant_id, project_id
           ON CONFLICT (tenant_id, project_id) DO UPDATE
           SET chunk_count = s.chunk_count + EXCLUDED.chunk_count, total_len = s.total_len + EXCLUDED.total_len""",
        {"sign": sign, "doc": document_id},
    )
