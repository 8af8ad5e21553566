"""Names and shapes of the schema that migrations create and searches rely on: the tables with embeddings, and each
one's partial HNSW index per embedding model (its name and build parameters)."""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING

from rag.knowledge import KINDS

if TYPE_CHECKING:
    from psycopg import sql

# Tables with an ``embedding``/``embedding_model`` pair (every kind's): each gets a partial HNSW index per model.
EMBEDDED_TABLES = tuple(kind.table for kind in KINDS)


def embedding_index_name(table: str, model_id: str, dimension: int) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", model_id.lower()).strip("_")[:24]
    digest = hashlib.sha1(f"{model_id}:{dimension}".encode()).hexdigest()[:8]
    return f"{table}_emb_{slug}_{dimension}_{digest}"


# The graph's build parameters. pgvector's defaults (m 16, ef_construction 64) build a graph whose
# recall@10 over a million clustered 384-d vectors stops at .95 even at ef_search 1,000; ef_construction
# 128 reaches .96 at ef_search 200 and .98 at 400, within the same search time (bench/index_variants.py).
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 128


def embedding_index_sql(
    table: str, model_id: str, dimension: int, *, concurrently: bool, alternate: bool = False
) -> sql.Composed:
    """The model's partial HNSW index; ``alternate``: over ``embedding_alt`` (a re-embedding run's new vectors), under the
    name it keeps once the run swaps the columns (``rag.reembed``)."""
    from psycopg import sql

    vector, model = ("embedding_alt", "embedding_alt_model") if alternate else ("embedding", "embedding_model")

    return sql.SQL(
        "CREATE INDEX {concurrently} IF NOT EXISTS {name} ON {table}"
        " USING hnsw (({vector}::vector({dim})) vector_cosine_ops) WITH (m = {m}, ef_construction = {ef_construction})"
        " WHERE {model_column} = {model}"
    ).format(
        m=sql.Literal(HNSW_M),
        ef_construction=sql.Literal(HNSW_EF_CONSTRUCTION),
        concurrently=sql.SQL("CONCURRENTLY" if concurrently else ""),
        name=sql.Identifier(embedding_index_name(table, model_id, dimension)),
        table=sql.Identifier(table),
        dim=sql.Literal(int(dimension)),
        model=sql.Literal(model_id),
        vector=sql.Identifier(vector),
        model_column=sql.Identifier(model),
    )
