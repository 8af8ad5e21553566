"""Maintains what BM25 needs beyond the chunks' tsvectors: chunk lengths and per-project statistics.

Keyword search ranks chunks by BM25 from ``chunks.search_tsv`` (sql/0009): its GIN index
finds the chunks of a search's filter holding a query term, the tsvector's positions give
the term frequency. Kept here, in the transaction that writes or deletes the chunks:
``chunk_lexemes`` (one narrow row per chunk with at least one term: its length in terms,
the sum of its lexemes' positions, and its lexemes without positions, whose GIN index
counts document frequencies) and ``keyword_stats`` (per tenant and project, BM25's N and
summed lengths). One row per chunk, not per (chunk, term): the postings table this
replaces cost 54-58 rows per chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING
from uuid import UUID

if TYPE_CHECKING:
    import psycopg

_ADD_STATS = """
    INSERT INTO keyword_stats AS s (tenant_id, project_id, chunk_count, total_len)
    SELECT tenant_id, project_id, %(sign)s * count(*), %(sign)s * sum(len) FROM lengths GROUP BY tenant_id, project_id
    ON CONFLICT (tenant_id, project_id) DO UPDATE
    SET chunk_count = s.chunk_count + EXCLUDED.chunk_count, total_len = s.total_len + EXCLUDED.total_len"""


def index_documents(conn: psycopg.Connection, document_ids: Sequence[UUID]) -> None:
    """Record the lengths and lexemes of the documents' chunks and count them into their projects' stats (set-wise)."""
    conn.execute(
        f"""WITH lengths AS MATERIALIZED (
                SELECT c.tenant_id, c.project_id, c.id, l.len, strip(c.search_tsv) AS lexemes
                FROM chunks c
                CROSS JOIN LATERAL (SELECT sum(cardinality(t.positions))::integer AS len FROM unnest(c.search_tsv) t) l
                WHERE c.document_id = ANY(%(docs)s::uuid[]) AND l.len > 0),
            added AS (
                INSERT INTO chunk_lexemes (chunk_id, tenant_id, project_id, len, lexemes)
                SELECT id, tenant_id, project_id, len, lexemes FROM lengths)
            {_ADD_STATS}""",
        {"docs": list(document_ids), "sign": 1},
    )


def index_document(conn: psycopg.Connection, document_id: UUID) -> None:
    """Record the lengths and lexemes of the document's chunks and count them into the project's stats."""
    index_documents(conn, [document_id])


def unindex_document(conn: psycopg.Connection, document_id: UUID) -> None:
    """Subtract the document's chunks from the stats (call before deleting them; their chunk_lexemes rows go with them, by cascade)."""
    conn.execute(
        f"""WITH lengths AS MATERIALIZED (
                SELECT l.tenant_id, l.project_id, l.chunk_id, l.len
                FROM chunks c JOIN chunk_lexemes l ON l.chunk_id = c.id
                WHERE c.document_id = %(doc)s)
            {_ADD_STATS}""",
        {"doc": document_id, "sign": -1},
    )
