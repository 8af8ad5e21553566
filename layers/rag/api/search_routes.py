"""The search routes: ranked results (``/v1/search``) and an LLM-ready context with numbered citations (``/v1/context``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from rag.api.models.search import ContextRequest, ContextResponse, SearchRequest, SearchResponse, search_result
from rag.api.request_scope import request_read, request_tenant
from rag.config import get_settings

if TYPE_CHECKING:
    from rag.search.engine import Hit

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]  # Powertools leaves Router.__init__ unannotated


def _search(request: SearchRequest) -> tuple[list[tuple[str, Hit]], float]:
    from rag.search.service import run_search
    from rag.store.embedding_space import active_embedder

    settings = get_settings()
    query = request.search_query(request_tenant(router.current_event.raw_event))
    # The reader when one is configured: a search may lag the writer by a bounded few seconds (docs/replicas.md).
    return request_read(lambda conn, writer: run_search(conn, active_embedder(conn, settings), settings, query, writer))


@router.post("/v1/search", summary="Semantic, keyword or hybrid search", tags=["search"])
def search(request: SearchRequest) -> SearchResponse:
    ranked, took_ms = _search(request)
    return SearchResponse(results=[search_result(type_name, hit) for type_name, hit in ranked], took_ms=round(took_ms, 2))


@router.post("/v1/context", summary="An LLM-ready context with numbered citations", tags=["search"])
def context(request: ContextRequest) -> ContextResponse:
    from rag.embedding.tokens import count_cl100k
    from rag.search.context import build_context

    ranked, took_ms = _search(request)
    text, passages = build_context(ranked, request.max_tokens, count_cl100k)
    cited = [
        search_result(p.type, p.hit).model_copy(
            update={
                "content": p.text,
                "start_char": p.start_char,
                "end_char": p.end_char,
                "start_turn": p.start_turn,
                "end_turn": p.end_turn,
            }  # fmt: skip
        )
        for p in passages
    ]
    return ContextResponse(context=text, results=cited, took_ms=round(took_ms, 2))
