"""What a re-embedding run embeds of each row: the text the live paths embed, cut the way they cut it.

A chunk is its content and an extracted item its description, as ingest and the extract stage embed them; a
segment is its text in pieces the model reads whole, whose vectors make the segment's by their token-weighted
mean (``rag.backfill.embed``), or its title and summary when it has no text. Rows without a vector yet are left
to the backfill, which embeds them in whatever model is active when it gets to them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rag.embedding.index_text import embedding_input
from rag.embedding.pieces import segment_pieces, segment_vector
from rag.store.schema import EMBEDDED_TABLES

if TYPE_CHECKING:
    import psycopg

    from rag.embedding.base import Embedder


@dataclass(frozen=True)
class Piece:
    """One text to embed (a record of a manifest): its row, and its weight in the row's vector."""

    row_id: int
    text: str
    weight: int = 1


def check_table(table: str) -> str:
    if table not in EMBEDDED_TABLES:
        raise ValueError(f"not an embedded table: {table!r}")
    return table


def pieces(conn: psycopg.Connection, table: str, first_id: int, last_id: int, embedder: Embedder) -> list[Piece]:
    """The texts of ``table``'s embedded rows with ids in [first_id, last_id], as the model reads them."""
    return _pieces(conn, table, "id BETWEEN %s AND %s AND embedding IS NOT NULL", (first_id, last_id), embedder)


def pieces_of(conn: psycopg.Connection, table: str, ids: list[int], embedder: Embedder) -> list[Piece]:
    """The texts of the rows ``ids`` of ``table``, whatever vectors they have."""
    return _pieces(conn, table, "id = ANY(%s)", (ids,), embedder)


def _pieces(conn: psycopg.Connection, table: str, where: str, params: tuple[Any, ...], embedder: Embedder) -> list[Piece]:
    check_table(table)
    if table == "segments":
        return _segment_pieces(conn, where, params, embedder)
    column = "content" if table == "chunks" else "description"
    found = conn.execute(f"SELECT id, {column} FROM {table} WHERE {where} ORDER BY id", params).fetchall()  # noqa: S608
    return [Piece(int(row_id), embedding_input(text)) for row_id, text in found]


def _segment_pieces(conn: psycopg.Connection, where: str, params: tuple[Any, ...], embedder: Embedder) -> list[Piece]:
    found = conn.execute(
        f"""SELECT id, document_id, start_char, end_char, 'Topic: ' || title || E'\\n' || summary
            FROM segments WHERE {where} ORDER BY id""",  # noqa: S608 - our own conditions
        params,
    ).fetchall()
    bodies: dict[Any, str] = dict(
        conn.execute(
            "SELECT id, coalesce(body, '') FROM documents WHERE id = ANY(%s)", (list({row[1] for row in found}),)
        ).fetchall()
    )
    result: list[Piece] = []
    for row_id, document_id, start, end, topic in found:
        parts = segment_pieces(bodies.get(document_id, ""), start, end, embedder) or [(topic, 1)]
        result.extend(Piece(int(row_id), embedding_input(text), weight) for text, weight in parts)
    return result


def row_vectors(table: str, pieces_and_vectors: Sequence[tuple[Piece, Sequence[float]]]) -> dict[int, list[float]]:
    """Each row's vector from its pieces' (a segment's: their weighted mean; any other row's: its one piece's)."""
    by_row: dict[int, list[tuple[Piece, Sequence[float]]]] = {}
    for piece, vector in pieces_and_vectors:
        by_row.setdefault(piece.row_id, []).append((piece, vector))
    if table != "segments":
        return {row: [float(x) for x in found[0][1]] for row, found in by_row.items()}
    return {row: segment_vector([v for _, v in found], [p.weight for p, _ in found]) for row, found in by_row.items()}


def write_alternate(conn: psycopg.Connection, table: str, vectors: dict[int, list[float]], model_id: str) -> int:
    """Set ``embedding_alt`` of the rows (one statement for all); returns the rows written."""
    return _write(conn, table, vectors, model_id, "embedding_alt")


def write_active(conn: psycopg.Connection, table: str, vectors: dict[int, list[float]], model_id: str) -> int:
    """Set ``embedding`` of the rows (one statement for all); returns the rows written."""
    return _write(conn, table, vectors, model_id, "embedding")


def _write(conn: psycopg.Connection, table: str, vectors: dict[int, list[float]], model_id: str, column: str) -> int:
    if not vectors:
        return 0
    from pgvector import Vector

    check_table(table)
    ids = list(vectors)
    cursor = conn.execute(
        f"""UPDATE {table} AS t SET {column} = v.embedding, {column}_model = %s
            FROM unnest(%s::bigint[], %s::vector[]) AS v(id, embedding) WHERE t.id = v.id""",  # noqa: S608 - checked table
        (model_id, ids, [Vector(vectors[i]) for i in ids]),
    )
    return cursor.rowcount
