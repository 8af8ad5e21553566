"""The search tools: ranked, numbered passages (``search``) or one merged context within a budget (``build_context``)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from rag.ask.standing import current_first, standings
from rag.ask.tool_args import ContextArgs, SearchArgs
from rag.ask.tool_context import ToolContext, ToolResult
from rag.ask.tool_passages import PASSAGE_CHARS, hit_passage, where

if TYPE_CHECKING:
    from rag.search.engine import Hit


def search_hits(
    ctx: ToolContext, query: str, types: list[str], project_ids: tuple[str, ...], top_k: int
) -> list[tuple[str, Hit]]:
    """Hybrid search within the narrowed scope (logged like any search), the hits that are evidence only (``rag.ask.evidence``)."""
    from rag.ask.evidence import evidence
    from rag.search.engine import SearchScope
    from rag.search.query_text import search_text
    from rag.search.service import SearchQuery, run_search

    scope = SearchScope(tenant_id=ctx.tenant_id, project_ids=project_ids)
    search = SearchQuery(query, scope, tuple(types), "hybrid", top_k)
    ranked, _ = run_search(ctx.conn, ctx.embedder, ctx.settings, search, ctx.writer)
    words = search_text(query) or query
    return current_first(evidence(ctx.conn, ctx.tenant_id, project_ids, words, ranked, ctx.settings.ask.min_evidence))


# Shown on their own (meeting_date) or as the item's status: "superseded by [2]", not a row id.
_SHOWN_APART = ("meeting_date", "status", "superseded_by")


def run_search_tool(ctx: ToolContext, args: SearchArgs) -> ToolResult:
    hits = search_hits(ctx, args.query, list(args.types), ctx.narrow(args.project_ids), args.top_k)
    cites = [ctx.citations.cite(hit_passage(type_name, hit)) for type_name, hit in hits]
    decisions = {hit.id: cite["cite_as"] for (type_name, hit), cite in zip(hits, cites) if type_name == "decision"}
    states = standings(ctx.conn, ctx.tenant_id, hits, decisions)
    results = []
    for (type_name, hit), cite, state in zip(hits, cites, states):
        fields = {k: v for k, v in (hit.metadata or {}).items() if v not in (None, "", []) and k not in _SHOWN_APART}
        results.append(
            {
                **cite, "type": type_name, "document_id": hit.document_id, "project_id": hit.project_id,
                "source": hit.title or hit.source_uri, "meeting_date": (hit.metadata or {}).get("meeting_date"),
                "where": where(hit.start_turn, hit.end_turn, hit.start_char, hit.end_char),
                "speakers": hit.speakers, "similarity": round(hit.similarity, 3) if hit.similarity is not None else None,
                "quoted_text": ctx.redact(hit.content[:PASSAGE_CHARS]),
                **({"status": state} if state else {}), **({"fields": fields} if type_name != "chunk" and fields else {}),
            }
        )  # fmt: skip
    if not results:
        return ToolResult({"results": [], "note": "nothing relevant found in the meetings and documents"}, 0)
    return ToolResult({"results": results}, len(results))


def _standing_shown(metadata: dict[str, Any] | None, state: str) -> dict[str, Any]:
    """An item's metadata with its status spelled out ("superseded on 2026-02-09") in place of a row id."""
    return {**{k: v for k, v in (metadata or {}).items() if k != "superseded_by"}, "status": state}


def run_context_tool(ctx: ToolContext, args: ContextArgs) -> ToolResult:
    from rag.embedding.tokens import count_cl100k
    from rag.search.context import build_context

    hits = search_hits(ctx, args.query, list(args.types), ctx.narrow(args.project_ids), args.top_k)
    shown = [
        (type_name, replace(hit, metadata=_standing_shown(hit.metadata, state)) if state else hit)
        for (type_name, hit), state in zip(hits, standings(ctx.conn, ctx.tenant_id, hits))
    ]
    passages = {id(hit): hit_passage(type_name, hit) for type_name, hit in shown}

    ids: dict[str, str] = {}

    def number(merged: Any) -> int:  # a merged passage spans its own range: that range is what is cited
        span = {"start_char": merged.start_char, "end_char": merged.end_char,
                "start_turn": merged.start_turn, "end_turn": merged.end_turn}  # fmt: skip
        passage = replace(passages[id(merged.hit)], **span)
        n = ctx.citations.add(passage)
        ids[f"[{n}]"] = passage.citation_id()
        return n

    text, cited = build_context(shown, args.max_tokens, count_cl100k, number=number)
    if not cited:
        return ToolResult({"quoted_context": "", "note": "nothing relevant found in the meetings and documents"}, 0)
    return ToolResult({"quoted_context": ctx.redact(text), "passages": len(cited), "citation_ids": ids}, len(cited))
