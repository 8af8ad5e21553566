"""Semantic, keyword (BM25) and hybrid (RRF) search over chunks, in one SQL statement each.

- Semantic: cosine distance on the model's partial HNSW index; pgvector 0.8's iterative
  index scan keeps a selective filter from starving the top-k.
- Keyword: exact BM25 (k1 1.2, b 0.75) over the ``chunk_terms`` postings, with IDF and
  average length from the whole project (better than per-meeting statistics, even
  when a search is filtered to one meeting). Query terms are ORed: a natural-language
  question rarely has every word in one chunk.
- Hybrid: reciprocal rank fusion of both lists (k=60, weights configurable),
  deduplicated by id, in the same statement.

Every statement filters on the tenant first; nothing here reads a tenant from input
other than ``SearchScope.tenant_id``, which the caller takes from the verified identity.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import psycopg

Mode = Literal["semantic", "keyword", "hybrid"]

BM25_K1 = 1.2
BM25_B = 0.75


@dataclass(frozen=True)
class SearchScope:
    """Who searches and within what; every field narrows the candidates."""

    tenant_id: str
    project_ids: tuple[str, ...] = ()
    document_ids: tuple[str, ...] = ()
    date_from: date | None = None
    date_to: date | None = None
    speakers: tuple[str, ...] = ()
    source_prefix: str | None = None


@dataclass(frozen=True)
class FusionWeights:
    rrf_k: int = 60
    semantic: float = 1.0
    keyword: float = 1.0


@dataclass(frozen=True)
class Hit:
    id: int
    score: float
    similarity: float | None
    content: str
    document_id: str
    project_id: str
    source_uri: str
    title: str | None
    start_char: int
    end_char: int
    start_turn: int | None
    end_turn: int | None
    speakers: list[str]
    metadata: dict[str, Any] = field(default_factory=dict)


def _scope_filter(scope: SearchScope, alias: str = "c") -> tuple[str, dict[str, Any], bool]:
    """SQL conditions on chunks (``alias``) and, when needed, documents ``d``; returns (sql, params, needs_documents)."""
    conditions = [f"{alias}.tenant_id = %(tenant)s"]
    params: dict[str, Any] = {"tenant": scope.tenant_id}
    needs_documents = False
    if scope.project_ids:
        conditions.append(f"{alias}.project_id = ANY(%(projects)s)")
        params["projects"] = list(scope.project_ids)
    if scope.document_ids:
        conditions.append(f"{alias}.document_id = ANY(%(documents)s::uuid[])")
        params["documents"] = list(scope.document_ids)
    if scope.speakers:
        conditions.append(f"{alias}.speakers && %(speakers)s::text[]")
        params["speakers"] = list(scope.speakers)
    if scope.date_from:
        conditions.append("d.meeting_date >= %(date_from)s")
        params["date_from"] = scope.date_from
        needs_documents = True
    if scope.date_to:
        conditions.append("d.meeting_date <= %(date_to)s")
        params["date_to"] = scope.date_to
        needs_documents = True
    if scope.source_prefix:
        conditions.append("starts_with(d.object_key, %(prefix)s)")
        params["prefix"] = scope.source_prefix
        needs_documents = True
    return " AND ".join(conditions), params, needs_documents


def _semantic_cte(dimension: int, where: str, join_documents: str) -> str:
    return f"""semantic AS (
        SELECT id, distance, row_number() OVER (ORDER BY distance) AS rank FROM (
            SELECT c.id, c.embedding::vector({dimension}) <=> %(qvec)s::vector({dimension}) AS distance
            FROM chunks c {join_documents}
            WHERE {where} AND c.embedding_model = %(model)s
            ORDER BY distance LIMIT %(candidates)s) s
        WHERE 1 - distance >= %(threshold)s)"""


def _keyword_cte(where: str, join_documents: str) -> str:
    return f"""query_terms AS (
        SELECT DISTINCT term FROM unnest(tsvector_to_array(to_tsvector('english', %(qtext)s))) AS term),
    term_df AS (
        SELECT ct.project_id, ct.term, count(*)::float8 AS df
        FROM chunk_terms ct JOIN query_terms q ON q.term = ct.term
        WHERE ct.tenant_id = %(tenant)s {"AND ct.project_id = ANY(%(projects)s)" if "%(projects)s" in where else ""}
        GROUP BY ct.project_id, ct.term),
    keyword AS (
        SELECT id, score, row_number() OVER (ORDER BY score DESC, id) AS rank FROM (
            SELECT ct.chunk_id AS id,
                   sum(ln(1.0::float8 + (ks.chunk_count - df.df + 0.5::float8) / (df.df + 0.5::float8))
                       * ct.tf * ({BM25_K1}::float8 + 1.0::float8)
                       / (ct.tf + {BM25_K1}::float8 * (1.0::float8 - {BM25_B}::float8
                          + {BM25_B}::float8 * ct.chunk_len / greatest(ks.total_len::float8 / greatest(ks.chunk_count, 1), 1.0::float8)))
                   ) AS score
            FROM chunk_terms ct
            JOIN term_df df ON df.project_id = ct.project_id AND df.term = ct.term
            JOIN keyword_stats ks ON ks.tenant_id = ct.tenant_id AND ks.project_id = ct.project_id
            JOIN chunks c ON c.id = ct.chunk_id {join_documents}
            WHERE ct.tenant_id = %(tenant)s AND {where}
            GROUP BY ct.chunk_id
            ORDER BY score DESC, ct.chunk_id LIMIT %(candidates)s) k)"""


def search_chunks(conn: psycopg.Connection, scope: SearchScope, *, ef_search: int = 100, **options: Any) -> list[Hit]:
    """The top chunks for a query under ``scope`` (options: see ``chunk_search_statement``)."""
    statement, params = chunk_search_statement(scope, **options)
    with conn.transaction():
        set_search_options(conn, ef_search)
        rows = conn.execute(statement, params, prepare=False).fetchall()
    return [Hit(*row) for row in rows]


def set_search_options(conn: psycopg.Connection, ef_search: int = 100) -> None:
    """Per-transaction settings every search statement runs with (SET LOCAL: safe with pooled connections)."""
    conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
    conn.execute(f"SET LOCAL hnsw.ef_search = {int(ef_search)}")
    # A generic plan cannot use the per-model partial index or the tenant's statistics.
    conn.execute("SET LOCAL plan_cache_mode = force_custom_plan")


def chunk_search_statement(
    scope: SearchScope,
    *,
    mode: Mode,
    query: str,
    query_vector: Any | None,
    model_id: str,
    dimension: int,
    top_k: int = 10,
    threshold: float = 0.0,
    fusion: FusionWeights = FusionWeights(),
    candidates: int | None = None,
) -> tuple[str, dict[str, Any]]:
    """SQL and parameters for the top ``top_k`` chunks; ``query_vector`` is needed unless mode is keyword."""
    if mode != "keyword" and query_vector is None:
        raise ValueError(f"{mode} search needs the query's vector")
    where, params, needs_documents = _scope_filter(scope)
    join_documents = "JOIN documents d ON d.id = c.document_id" if needs_documents else ""
    dimension = int(dimension)
    # Fusion needs more than top_k from each side for the lists to overlap meaningfully.
    n_candidates = candidates or (top_k if mode != "hybrid" else max(top_k * 4, 40))
    params.update(
        qvec=query_vector, qtext=query, model=model_id, candidates=n_candidates, threshold=threshold, top_k=top_k,
        rrf_k=float(fusion.rrf_k), w_sem=float(fusion.semantic), w_kw=float(fusion.keyword),
    )  # fmt: skip
    ctes = []
    if mode in ("semantic", "hybrid"):
        ctes.append(_semantic_cte(dimension, where, join_documents))
    if mode in ("keyword", "hybrid"):
        ctes.append(_keyword_cte(where, join_documents))
    if mode == "semantic":
        ranked = "SELECT id, 1 - distance AS score FROM semantic"
    elif mode == "keyword":
        ranked = "SELECT id, score FROM keyword"
    else:
        ranked = """SELECT coalesce(s.id, k.id) AS id,
                           coalesce(%(w_sem)s / (%(rrf_k)s + s.rank), 0.0::float8)
                         + coalesce(%(w_kw)s / (%(rrf_k)s + k.rank), 0.0::float8) AS score
                    FROM semantic s FULL JOIN keyword k ON k.id = s.id"""
    similarity = (
        f"1 - (c.embedding::vector({dimension}) <=> %(qvec)s::vector({dimension}))"
        if query_vector is not None
        else "NULL::float8"
    )
    statement = f"""WITH {", ".join(ctes)}, ranked AS ({ranked} ORDER BY score DESC, id LIMIT %(top_k)s)
        SELECT r.id, r.score, CASE WHEN c.embedding_model = %(model)s THEN {similarity} END,
               c.content, c.document_id::text, c.project_id, d.source_uri, d.title,
               c.start_char, c.end_char, c.start_turn, c.end_turn, c.speakers,
               jsonb_build_object('chunk_index', c.chunk_index, 'heading_path', c.heading_path,
                                  'start_time', c.start_time, 'end_time', c.end_time, 'meeting_date', d.meeting_date)
        FROM ranked r JOIN chunks c ON c.id = r.id JOIN documents d ON d.id = c.document_id
        WHERE c.tenant_id = %(tenant)s
        ORDER BY r.score DESC, r.id"""
    return statement, params
