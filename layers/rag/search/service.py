"""One search request end to end: scope from the caller, query vector (cached), SQL, query log."""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from rag.search.engine import FusionWeights, Hit, Mode, SearchScope, search_types
from rag.search.fusion import merge_types
from rag.search.query_cache import QueryEmbeddingCache
from rag.search.query_log import PendingQueryLog
from rag.search.query_text import search_text
from rag.search.recency import favour_recent
from rag.search.rerank import get_reranker, rerank
from rag.search.scope_size import ScopeSizeCache
from rag.search.types import SEARCHABLE_TYPES
from rag.store.schema import embedding_index_name

if TYPE_CHECKING:
    import psycopg

    from rag.config import Settings
    from rag.embedding.base import Embedder
    from rag.store.replica import WriterSource

_cache = QueryEmbeddingCache()
_scope_sizes = ScopeSizeCache()
pending_log = PendingQueryLog()


@dataclass(frozen=True)
class SearchQuery:
    """One search as the search layer takes it, validated by its caller (the API's ``SearchRequest``).

    ``scope`` carries the tenant, which the caller takes from the verified identity.
    """

    query: str
    scope: SearchScope
    types: tuple[str, ...] = ("chunk",)
    mode: Mode = "hybrid"
    top_k: int = 10
    threshold: float = 0.0


def run_search(
    conn: psycopg.Connection,
    embedder: Embedder,
    settings: Settings,
    request: SearchQuery,
    writer: WriterSource | None = None,
) -> tuple[list[tuple[str, Hit]], float]:
    """(type, hit) pairs best first, and the time taken in ms; every search is logged.

    ``writer``: where the search's writes (query log, query-embedding cache) go when ``conn`` is a read replica
    (``rag.store.replica``); without it they go on ``conn``, the query log riding in the search's own transaction.
    """
    started = time.perf_counter()
    text = search_text(request.query)
    vector = (
        None if request.mode == "keyword"
        else _cache.vector(conn, embedder, text, ttl_minutes=settings.search.query_cache_minutes, writer=writer)
    )  # fmt: skip
    scope = request.scope
    fusion = FusionWeights(
        settings.search.rrf_k, settings.search.rrf_semantic_weight, settings.search.rrf_keyword_weight, settings.search.fusion,
        settings.search.fusion_semantic_share,
    )  # fmt: skip
    specs = [SEARCHABLE_TYPES[name] for name in dict.fromkeys(request.types)]
    reranker = get_reranker(settings)
    candidates = max(request.top_k, settings.search.rerank_candidates) if reranker else request.top_k
    if settings.search.recency_half_life_days:
        candidates = max(candidates, 2 * request.top_k)  # room for a near-tie just below the cut
    exact, ef_search = False, settings.search.hnsw_ef_search
    if request.mode != "keyword":
        index = embedding_index_name("chunks", embedder.model_id, embedder.dimension)
        size = _scope_sizes.size(conn, scope, index, ttl_seconds=settings.search.scope_size_cache_seconds)
        exact = size.exact_is_faster(settings.search.exact_search_max_rows, settings.search.exact_search_max_share)
        ef_search = size.ef_search(
            settings.search.hnsw_ef_search, settings.search.hnsw_ef_search_rows, settings.search.hnsw_ef_search_max
        )
    hits_by_type = search_types(
        conn, specs, scope, mode=request.mode, query=text, query_vector=vector, model_id=embedder.model_id,
        dimension=embedder.dimension, top_k=candidates, threshold=request.threshold, fusion=fusion,
        ef_search=ef_search, exact=exact, timeout_ms=settings.database.api_statement_timeout_ms,
        before=None if writer else partial(pending_log.write_in_transaction, flush_seconds=settings.search.query_log_flush_seconds),
    )  # fmt: skip
    if vector is not None and _model_switched_under(conn, settings, embedder, hits_by_type):
        from rag.store.embedding_space import active_embedder

        return run_search(conn, active_embedder(conn, settings), settings, request, writer)
    ranked = merge_types(hits_by_type, mode=request.mode, top_k=candidates, fusion=fusion)
    if settings.search.recency_half_life_days:
        ranked = favour_recent(
            ranked, half_life_days=settings.search.recency_half_life_days, weight=settings.search.recency_weight
        )
    ranked = rerank(reranker, request.query, ranked, request.top_k) if reranker else ranked[: request.top_k]
    took_ms = (time.perf_counter() - started) * 1000
    log_query(conn, request, [hit for _, hit in ranked], took_ms, settings.search.query_log_flush_seconds, writer)
    return ranked, took_ms


def _model_switched_under(
    conn: psycopg.Connection, settings: Settings, embedder: Embedder, hits_by_type: dict[str, list[Hit]]
) -> bool:
    """Whether a move switched the database's model between choosing the embedder and searching (no vector matched).

    Read only while a move is configured and no row matched the query's vector: a search that raced the switch runs
    again in the new model instead of coming back with keyword matches alone.
    """
    if settings.reembed.provider is None or any(hit.semantic_rank is not None for hits in hits_by_type.values() for hit in hits):
        return False
    from rag.store.embedding_space import active_model

    active = active_model(conn)
    return active is not None and active[0] != embedder.model_id


def log_query(
    conn: psycopg.Connection, request: SearchQuery, hits: list[Hit], took_ms: float, flush_seconds: float = 0.0,
    writer: WriterSource | None = None,
) -> None:  # fmt: skip
    """Queue the search's row (``rag.search.query_log``); written now if nothing was for ``flush_seconds``.

    With a ``writer`` (``conn`` is a replica) no search transaction can carry the rows: a batch goes to the writer
    once ``batch_ready``, one statement for up to ``batch_rows`` searches.
    """
    similarities = [h.similarity for h in hits if h.similarity is not None]
    scope = request.scope
    pending_log.add(
        scope.tenant_id, request.query, request.mode, list(request.types), scope.filters(), len(hits),
        max(similarities) if similarities else None,
        sum(similarities) / len(similarities) if similarities else None, took_ms,
    )  # fmt: skip
    if writer is not None:
        if pending_log.batch_ready(flush_seconds):
            pending_log.flush(writer())
    elif pending_log.due(flush_seconds):
        pending_log.flush(conn)
