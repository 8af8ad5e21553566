"""Maintains the BM25 postings (``chunk_terms``) and per-project statistics (``keyword_stats``).

Postings come from each chunk's english tsvector, so ingest and search stem and drop
stop words exactly as PostgreSQL's full-text search does. Called inside the
transaction that writes or deletes the chunks; both statements reach the document's
rows through indexes (never a scan of the postings table).
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

if TYPE_CHECKING:
    import psycopg

# Per chunk of one document: its tenant, project and length in terms (chunks without terms are not counted).
_CHUNK_LENGTHS = """
    SELECT c.tenant_id, c.project_id, c.id, l.len
    FROM chunks c CROSS JOIN LATERAL (SELECT sum(cardinality(t.positions)) AS len FROM unnest(c.search_tsv) t) l
    WHERE c.document_id = %(doc)s AND l.len > 0"""

_ADD_STATS = """
    INSERT INTO keyword_stats AS s (tenant_id, project_id, chunk_count, total_len)
    SELECT tenant_id, project_id, %(sign)s * count(*), %(sign)s * sum(len) FROM lengths GROUP BY tenant_id, project_id
    ON CONFLICT (tenant_id, project_id) DO UPDATE
    SET chunk_count = s.chunk_count + EXCLUDED.chunk_count, total_len = s.total_len + EXCLUDED.total_len"""


def index_document(conn: psycopg.Connection, document_id: UUID) -> None:
    """Add the postings of the document's chunks and count them into the project's stats."""
    conn.execute(
        f"""WITH lengths AS ({_CHUNK_LENGTHS}),
            postings AS (
                INSERT INTO chunk_terms (tenant_id, project_id, term, chunk_id, document_id, tf, chunk_len)
                SELECT c.tenant_id, c.project_id, t.lexeme, c.id, c.document_id, cardinality(t.positions), l.len
                FROM chunks c JOIN lengths l ON l.id = c.id CROSS JOIN LATERAL unnest(c.search_tsv) AS t
                WHERE c.document_id = %(doc)s)
            {_ADD_STATS}""",
        {"doc": document_id, "sign": 1},
    )


def unindex_document(conn: psycopg.Connection, document_id: UUID) -> None:
    """Subtract the document's chunks from the stats (the postings go with the chunks, by cascade)."""
    conn.execute(f"WITH lengths AS ({_CHUNK_LENGTHS}) {_ADD_STATS}", {"doc": document_id, "sign": -1})
