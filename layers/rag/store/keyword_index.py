"""Maintains what BM25 needs beyond the chunks' tsvectors: chunk lengths and per-project statistics.

Keyword search ranks chunks by BM25 straight from ``chunks.search_tsv`` (sql/0009): its GIN
index finds the chunks holding a query term and counts them (document frequency), the
tsvector's positions give the term frequency. Kept here, in the transaction that writes or
deletes the chunks: ``chunk_lengths`` (a chunk's length in terms, the sum of its lexemes'
positions; only chunks with at least one term) and ``keyword_stats`` (per tenant and
project, BM25's N and summed lengths). One row per chunk, not per (chunk, term): the
postings table this replaces cost 54-58 rows per chunk.
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
    """Record the lengths of the documents' chunks and count them into their projects' stats (set-wise)."""
    conn.execute(
        f"""WITH lengths AS MATERIALIZED (
                SELECT c.tenant_id, c.project_id, c.id, l.len
                FROM chunks c
                CROSS JOIN LATERAL (SELECT sum(cardinality(t.positions))::integer AS len FROM unnest(c.search_tsv) t) l
                WHERE c.document_id = ANY(%(docs)s::uuid[]) AND l.len > 0),
            added AS (INSERT INTO chunk_lengths (chunk_id, len) SELECT id, len FROM lengths)
            {_ADD_STATS}""",
        {"docs": list(document_ids), "sign": 1},
    )


def index_document(conn: psycopg.Connection, document_id: UUID) -> None:
    """Record the lengths of the document's chunks and count them into the project's stats."""
    index_documents(conn, [document_id])


def unindex_document(conn: psycopg.Connection, document_id: UUID) -> None:
    """Subtract the document's chunks from the stats (call before deleting them; their lengths go with them, by cascade)."""
    conn.execute(
        f"""WITH lengths AS MATERIALIZED (
                SELECT c.tenant_id, c.project_id, c.id, l.len
                FROM chunks c JOIN chunk_lengths l ON l.chunk_id = c.id
                WHERE c.document_id = %(doc)s)
            {_ADD_STATS}""",
        {"doc": document_id, "sign": -1},
    )
