"""Semantic, keyword and hybrid search over every searchable type, one SQL statement per type.

One template serves all types; a type is a kind of ``rag.knowledge`` (by name: ``rag.search.types``):
its table, the text shown as content, its metadata fields, its keyword ranking.

- Semantic: cosine distance on the model's partial HNSW index (``embedding::vector(dim)``,
  ``WHERE embedding_model = model``); pgvector 0.8's iterative index scan keeps a
  selective filter from starving the top-k. A scope that is small both in rows and as a
  share of the tenant (``rag.search.scope_size.ScopeSize.exact_is_faster``: one meeting, a small project) is
  searched exactly instead: its rows through the tenant/project or document btree and a
  sort by distance. The planner cannot make that choice itself: it costs the HNSW scan as
  if the filter kept every row it visits, and on a 1% filter the iterative scan visits
  (and fetches from the heap) about a hundred rows for each one it keeps. Semantic mode alone
  has a slimmer statement of its own (``_semantic_statement``).
- Keyword, chunks: exact BM25 (k1 1.2, b 0.75) over the chunks' ``search_tsv`` (GIN index, term
  frequencies from positions) and ``chunk_lexemes`` (lengths, document frequencies), with IDF and
  average length from the whole project (better than per-meeting statistics, even
  when a search is filtered to one meeting). Query terms are ORed: a natural-language
  question rarely has every word in one chunk.
- Keyword, segments and knowledge items: BM25 as well (same k1 and b, terms ORed), computed at
  query time from each row's ``search_tsv``: rows matching any query term come from the
  GIN index, term frequencies from the tsvector's positions, N and the average length (in
  lexemes) from the rows of the same filter. These tables are small (a handful of items
  per meeting), so counting the filter's rows is cheap, and a postings table would only
  add upkeep to every backfill write. Plain ``ts_rank`` was rejected although ORed
  ``ts_rank`` measured level with BM25 on chunks: it has no IDF, and on one-sentence
  items (term frequency almost always 1) it degenerates into "how many query words
  match", so a rare exact term (a supplier's name) loses to two common words.
- Hybrid: a convex combination of the min-max normalized similarity and BM25 scores of
  both candidate lists (``FusionWeights``; reciprocal rank fusion as an option),
  deduplicated by id, in the same statement. Each hit keeps its rank on either side, so
  that ``rag.search.fusion`` can merge the lists of several types into one ranking.

Every statement filters on the tenant first; nothing here reads a tenant from input
other than ``SearchScope.tenant_id``, which the caller takes from the verified identity.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from datetime import date
from typing import TYPE_CHECKING, Any, Literal

from rag.search.bm25 import KEYWORD_CTES
from rag.search.speakers import with_people_joined
from rag.search.types import SEARCHABLE_TYPES, SearchableType
from rag.store.connection import pipelined_transaction

if TYPE_CHECKING:
    import psycopg

Mode = Literal["semantic", "keyword", "hybrid"]


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

    def filters(self) -> dict[str, Any]:
        """Every field but the tenant, JSON-ready: what a search was narrowed to (the query log's ``filters``)."""
        return {f.name: _json_ready(getattr(self, f.name)) for f in fields(self) if f.name != "tenant_id"}


def _json_ready(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    return value.isoformat() if isinstance(value, date) else value


FusionMethod = Literal["convex", "rrf"]


@dataclass(frozen=True)
class FusionWeights:
    """How hybrid search joins its two lists.

    ``convex`` (the default): ``semantic_share`` x the cosine similarity plus the rest x the
    BM25 score, each min-max normalized over its own candidate list (a hit missing from a
    list gets 0 there). ``rrf``: reciprocal rank fusion, ``semantic / (rrf_k + rank)`` plus
    ``keyword / (rrf_k + rank)``. Measured on ../shared/eval (docs/retrieval-experiments.md),
    convex fusion with an even share beats RRF in both settings: scores keep how far ahead a
    hit is, which ranks throw away.
    """

    rrf_k: int = 60
    semantic: float = 1.0
    keyword: float = 1.0
    method: FusionMethod = "convex"
    semantic_share: float = 0.5


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
    semantic_rank: int | None = None  # rank on the semantic side of this type's search (None: not there)
    keyword_rank: int | None = None
    keyword_score: float | None = None  # BM25 (None: not on the keyword side)


def _scope_filter(scope: SearchScope, alias: str = "c") -> tuple[str, dict[str, Any], str]:
    """SQL conditions on the searched rows (``alias``) and, when needed, documents ``d``; returns (sql, params, documents join)."""
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
        # Labels compare by their folded keys (sql/0011): "sofia ruiz" finds "Sofia Ruiz (PM)".
        conditions.append(f"{alias}.speaker_keys && speaker_keys(%(speakers)s::text[])")
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
    join_documents = f"JOIN documents d ON d.id = {alias}.document_id" if needs_documents else ""
    return " AND ".join(conditions), params, join_documents


def _distance(dimension: int) -> str:
    """Cosine distance of the row ``c`` to the query vector, cast to the model's size (its partial HNSW index's expression)."""
    return f"c.embedding::vector({dimension}) <=> %(qvec)s::vector({dimension})"


def _distance_order(distance: str, exact: bool) -> str:
    # The HNSW index serves only ORDER BY <column> <=> <vector>: "+ 0" orders by the same
    # value through an exact sort of the filtered rows.
    return f"({distance}) + 0" if exact else "distance"


def _semantic_cte(table: str, dimension: int, where: str, join_documents: str, exact: bool) -> str:
    distance = _distance(dimension)
    order = _distance_order(distance, exact)
    return f"""semantic AS (
        SELECT id, distance, row_number() OVER (ORDER BY distance) AS rank FROM (
            SELECT c.id, {distance} AS distance
            FROM {table} c {join_documents}
            WHERE {where} AND c.embedding_model = %(model)s
            ORDER BY {order} LIMIT %(candidates)s) s
        WHERE 1 - distance >= %(threshold)s)"""


def _min_max(value: str) -> str:
    """``value`` scaled to 0..1 over the rows that have it (1 when they all score alike; NULL stays NULL)."""
    low, high = f"min({value}) OVER ()", f"max({value}) OVER ()"
    return (
        f"CASE WHEN {value} IS NULL THEN NULL WHEN {high} > {low} THEN ({value} - {low}) / ({high} - {low}) ELSE 1.0::float8 END"
    )


def search_types(
    conn: psycopg.Connection,
    specs: Sequence[SearchableType],
    scope: SearchScope,
    *,
    ef_search: int = 100,
    timeout_ms: int | None = None,
    before: Callable[[psycopg.Connection], None] | None = None,
    **options: Any,
) -> dict[str, list[Hit]]:
    """The top rows of each type for a query under ``scope`` (options: see ``search_statement``).

    One statement per type, all sent in one pipeline inside one transaction: a search of
    all six types costs one network round trip, not six (a speaker filter adds one before them: the
    people of the scope, ``rag.search.speakers``). ``before`` may add statements of its own to that
    transaction (the pending query-log rows).
    """
    scope = with_people_joined(conn, scope)  # a speaker filter's "Dana" is the project's Dana Kim too
    statements = [(spec.name, *search_statement(spec, scope, **options)) for spec in specs]
    with pipelined_transaction(conn):
        if before is not None:
            before(conn)
        set_search_options(conn, ef_search, timeout_ms)
        cursors = [(name, conn.execute(sql, params, prepare=False)) for name, sql, params in statements]
    return {name: [Hit(*row) for row in cursor.fetchall()] for name, cursor in cursors}


def search_type(
    conn: psycopg.Connection, spec: SearchableType, scope: SearchScope, *, ef_search: int = 100, **options: Any
) -> list[Hit]:
    """The top rows of one type for a query under ``scope`` (options: see ``search_statement``)."""
    return search_types(conn, [spec], scope, ef_search=ef_search, **options)[spec.name]


def search_chunks(conn: psycopg.Connection, scope: SearchScope, *, ef_search: int = 100, **options: Any) -> list[Hit]:
    """The top chunks for a query under ``scope`` (options: see ``search_statement``)."""
    return search_type(conn, SEARCHABLE_TYPES["chunk"], scope, ef_search=ef_search, **options)


def set_search_options(conn: psycopg.Connection, ef_search: int = 100, timeout_ms: int | None = None) -> None:
    """Per-transaction settings every search statement runs with (SET LOCAL: safe with pooled connections).

    ``timeout_ms`` bounds each statement (the database's default otherwise), whatever the query holds.
    """
    # A generic plan cannot use the per-model partial index or the tenant's statistics (plan_cache_mode).
    # Parallel workers cost more to start than a search takes (measured at 1M rows: 40-65 ms
    # with them, 4-6 ms without); concurrent Lambdas are the parallelism.
    conn.execute(
        "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', %s, true),"
        " set_config('plan_cache_mode', 'force_custom_plan', true),"
        " set_config('max_parallel_workers_per_gather', '0', true),"
        " set_config('statement_timeout', coalesce(%s, current_setting('statement_timeout')), true)",
        (str(int(ef_search)), None if timeout_ms is None else f"{int(timeout_ms)}ms"),
        prepare=False,
    )


def chunk_search_statement(scope: SearchScope, **options: Any) -> tuple[str, dict[str, Any]]:
    """SQL and parameters for the top chunks (options: see ``search_statement``)."""
    return search_statement(SEARCHABLE_TYPES["chunk"], scope, **options)


def search_statement(
    spec: SearchableType,
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
    exact: bool = False,
) -> tuple[str, dict[str, Any]]:
    """SQL and parameters for the top ``top_k`` rows of ``spec``; ``query_vector`` is needed unless mode is keyword.

    ``exact``: the semantic side sorts the filtered rows by distance instead of using the HNSW index.
    """
    if mode != "keyword" and query_vector is None:
        raise ValueError(f"{mode} search needs the query's vector")
    if mode == "semantic":
        return _semantic_statement(spec, scope, query_vector, model_id, int(dimension), top_k, threshold, candidates, exact)
    where, params, join_documents = _scope_filter(scope)
    dimension = int(dimension)
    # Fusion needs more than top_k from each side for the lists to overlap meaningfully.
    n_candidates = candidates or (top_k if mode == "keyword" else max(top_k * 4, 40))
    params.update(
        qvec=query_vector, qtext=query, model=model_id, candidates=n_candidates, threshold=threshold, top_k=top_k,
        rrf_k=float(fusion.rrf_k), w_sem=float(fusion.semantic), w_kw=float(fusion.keyword),
        share=float(fusion.semantic_share),
    )  # fmt: skip
    ctes = []
    if mode == "hybrid":
        ctes.append(_semantic_cte(spec.table, dimension, where, join_documents, exact))
    ctes.append(KEYWORD_CTES[spec.keyword](spec.table, where, join_documents))
    if mode == "keyword":
        ranked = "SELECT id, score, NULL::bigint AS semantic_rank, rank AS keyword_rank, score AS keyword_score FROM keyword"
    elif fusion.method == "rrf":
        ranked = """SELECT coalesce(s.id, k.id) AS id,
                           coalesce(%(w_sem)s / (%(rrf_k)s + s.rank), 0.0::float8)
                         + coalesce(%(w_kw)s / (%(rrf_k)s + k.rank), 0.0::float8) AS score,
                           s.rank AS semantic_rank, k.rank AS keyword_rank, k.score AS keyword_score
                    FROM semantic s FULL JOIN keyword k ON k.id = s.id"""
    else:
        ranked = f"""SELECT coalesce(s.id, k.id) AS id,
                           %(share)s * coalesce({_min_max("-s.distance")}, 0.0::float8)
                         + (1.0::float8 - %(share)s) * coalesce({_min_max("k.score")}, 0.0::float8) AS score,
                           s.rank AS semantic_rank, k.rank AS keyword_rank, k.score AS keyword_score
                    FROM semantic s FULL JOIN keyword k ON k.id = s.id"""
    similarity = f"1 - ({_distance(dimension)})" if query_vector is not None else "NULL::float8"
    statement = f"""WITH {", ".join(ctes)}, ranked AS ({ranked} ORDER BY score DESC, id LIMIT %(top_k)s)
        SELECT r.id, r.score, CASE WHEN c.embedding_model = %(model)s THEN {similarity} END,
               {_result_columns(spec)}, r.semantic_rank, r.keyword_rank, r.keyword_score
        FROM ranked r JOIN {spec.table} c ON c.id = r.id JOIN documents d ON d.id = c.document_id
        WHERE c.tenant_id = %(tenant)s
        ORDER BY r.score DESC, r.id"""
    return statement, params


def _result_columns(spec: SearchableType) -> str:
    """A hit's columns from its row ``c`` and document ``d``, between its scores and its ranks (``Hit``'s order)."""
    return f"""{spec.content}, c.document_id::text, c.project_id, d.source_uri, d.title,
               c.start_char, c.end_char, c.start_turn, c.end_turn, c.speakers, {spec.metadata_sql()}"""


def _semantic_statement(
    spec: SearchableType, scope: SearchScope, query_vector: Any, model_id: str, dimension: int, top_k: int,
    threshold: float, candidates: int | None, exact: bool,
) -> tuple[str, dict[str, Any]]:  # fmt: skip
    """Semantic mode alone: the scan's top rows, their columns and documents; nothing to fuse.

    The hybrid template costs a semantic search 0.2-0.4 ms more at 100,000 chunks (planning its
    CTEs and window functions over both sides): 10-20% of the search. The scan keeps its rows
    narrow (id, distance) and the top ones are looked up again: carrying every column through the
    exact sort of a scope's rows cost 3 ms at 10,000 rows (bench/query_latency.py, 1% of a million).
    """
    where, params, join_documents = _scope_filter(scope)
    distance = _distance(dimension)
    params.update(qvec=query_vector, model=model_id, candidates=candidates or top_k, threshold=threshold, top_k=top_k)
    statement = f"""SELECT c.id, 1 - s.distance, 1 - s.distance, {_result_columns(spec)},
               row_number() OVER (ORDER BY s.distance, s.id), NULL::bigint, NULL::float8
        FROM (SELECT c.id, {distance} AS distance
              FROM {spec.table} c {join_documents}
              WHERE {where} AND c.embedding_model = %(model)s
              ORDER BY {_distance_order(distance, exact)} LIMIT %(candidates)s) s
        JOIN {spec.table} c ON c.id = s.id JOIN documents d ON d.id = c.document_id
        WHERE c.tenant_id = %(tenant)s AND 1 - s.distance >= %(threshold)s
        ORDER BY s.distance, s.id LIMIT %(top_k)s"""
    return statement, params
