"""The tools a chat model (``/v1/ask``, MCP clients) calls: this API's own operations, defined once.

Each tool is a name, a description, a pydantic model of its arguments (its JSON schema is
what OpenAI, Anthropic, Bedrock and MCP clients see) and a function run with a
``ToolContext``: the caller's tenant, from the verified identity, and the projects the
request allows. A tool can narrow that scope (fewer projects, one document) and never
widen it: a project outside it is an error the model reads, and a document of another
tenant or project is not found.

What a tool returns to the model is JSON data: retrieved text is a quoted string in it,
each passage numbered ``[n]`` in the request's ``Citations``, never an instruction.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import date
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rag.api.models import MAX_QUERY_CHARS, PROJECT_PATTERN, SearchRequest, SearchType, search_result, valid_project_ids
from rag.ask.citations import Citations, Passage
from rag.ask.standing import current_first, standings
from rag.knowledge import NAMES, labelled_names

if TYPE_CHECKING:
    import psycopg

    from rag.config import Settings
    from rag.embedding.base import Embedder
    from rag.search.engine import Hit

PASSAGE_CHARS = 2500  # a passage the model reads: a 512-token chunk of English is about 2,000 characters


class ToolError(Exception):
    """A tool call the model can correct (bad scope, unknown document): its message is the tool's result."""


@dataclass
class ToolContext:
    conn: psycopg.Connection
    settings: Settings
    tenant_id: str
    project_ids: tuple[str, ...] = ()  # the request's scope; empty: every project of the tenant
    citations: Citations = field(default_factory=Citations)
    redact: Callable[[str], str] = staticmethod(lambda text: text)
    _embedder: Embedder | None = None

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            from rag.embedding import get_embedder

            self._embedder = get_embedder(self.settings)
        return self._embedder

    def narrow(self, asked: list[str] | tuple[str, ...]) -> tuple[str, ...]:
        """The projects a tool may read: those asked for within the request's, or the request's."""
        if not asked:
            return self.project_ids
        if not self.project_ids:
            return tuple(asked)
        kept = tuple(p for p in asked if p in self.project_ids)
        if not kept:
            raise ToolError(f"project(s) {', '.join(asked)} are outside this request's projects: {', '.join(self.project_ids)}")
        return kept

    def in_scope(self, project_id: str) -> bool:
        return not self.project_ids or project_id in self.project_ids


@dataclass(frozen=True)
class ToolResult:
    data: dict[str, Any]  # what the model reads (JSON)
    count: int  # items found (0: nothing)

    def text(self) -> str:
        return json.dumps(self.data, default=str, ensure_ascii=False)


class ToolArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


TypeChoice = SearchType | Literal["all"]


class SearchArgs(ToolArgs):
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="what to look for, in natural language")
    types: list[TypeChoice] = Field(
        default_factory=lambda: ["chunk"], min_length=1, max_length=len(NAMES) + 1,
        description=f"{labelled_names()}; all: every type in one ranked list",
    )  # fmt: skip
    project_ids: list[str] = Field(default_factory=list, max_length=20, description="only these projects (optional)")
    top_k: int = Field(default=6, ge=1, le=20, description="how many results")

    @field_validator("project_ids")
    @classmethod
    def _projects(cls, values: list[str]) -> list[str]:
        return valid_project_ids(values)


class ContextArgs(SearchArgs):
    max_tokens: int = Field(default=1500, ge=200, le=6000, description="budget of the context")


class NoArgs(ToolArgs):
    pass


class MeetingsArgs(ToolArgs):
    project_id: str | None = Field(default=None, pattern=PROJECT_PATTERN, description="one project (optional)")
    limit: int = Field(default=10, ge=1, le=50)


class TasksArgs(MeetingsArgs):
    limit: int = Field(default=20, ge=1, le=50)
    assignee: str | None = Field(default=None, max_length=200, description="only this person's tasks (their name)")
    due_after: date | None = Field(default=None, description="only tasks due on or after this day (YYYY-MM-DD)")
    due_before: date | None = Field(default=None, description="only tasks due on or before this day (YYYY-MM-DD)")
    status: Literal["open", "done", "cancelled", "blocked", "any"] = Field(
        default="open", description="the tasks' status after every meeting (default open; any: every task)"
    )


class ChangesArgs(ToolArgs):
    project_id: str | None = Field(
        default=None, pattern=PROJECT_PATTERN, description="the project (optional when the request has one project)"
    )
    since: date = Field(description="first meeting date, inclusive (YYYY-MM-DD)")
    until: date | None = Field(default=None, description="last meeting date, inclusive (default: no end)")
    limit: int = Field(default=20, ge=1, le=50, description="at most this many items per list")


class BriefArgs(ToolArgs):
    project_id: str | None = Field(
        default=None, pattern=PROJECT_PATTERN, description="the project (optional when the request has one project)"
    )
    days: int = Field(default=14, ge=1, le=366, description="what changed in the meetings of the last N days")


class ReadDocumentArgs(ToolArgs):
    document_id: str = Field(
        pattern=r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
        description="a document_id from a search result or a meeting",
    )
    start_turn: int | None = Field(default=None, ge=0, description="first turn of a transcript (inclusive)")
    end_turn: int | None = Field(default=None, ge=0, description="last turn of a transcript (inclusive)")
    start_char: int | None = Field(default=None, ge=0, description="or: first character of the document's text")
    end_char: int | None = Field(default=None, ge=0, description="or: end character (exclusive)")


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    args: type[ToolArgs]
    run: Callable[[ToolContext, Any], ToolResult]
    retrieves: bool = True  # whether what it returns is evidence (a passage) rather than a listing

    def schema(self) -> dict[str, Any]:
        schema = self.args.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        return schema

    def openai(self) -> dict[str, Any]:
        return {"type": "function", "function": {"name": self.name, "description": self.description, "parameters": self.schema()}}

    def anthropic(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": self.schema()}

    def bedrock(self) -> dict[str, Any]:
        return {"toolSpec": {"name": self.name, "description": self.description, "inputSchema": {"json": self.schema()}}}

    def call(self, ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
        """Validate the arguments and run; a model's mistake comes back as an error result, not an exception."""
        try:
            args = self.args.model_validate(arguments)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors()[:5])
            return ToolResult({"error": f"invalid arguments: {problems}"}, 0)
        try:
            return self.run(ctx, args)
        except ToolError as exc:
            return ToolResult({"error": str(exc)}, 0)


# --- the operations ----------------------------------------------------------------------


def _passage_of(type_name: str, hit: Hit) -> Passage:
    meeting = (hit.metadata or {}).get("meeting_date")
    return Passage(
        type=type_name, document_id=hit.document_id, source_uri=hit.source_uri, title=hit.title,
        start_char=hit.start_char, end_char=hit.end_char, start_turn=hit.start_turn, end_turn=hit.end_turn,
        speakers=tuple(hit.speakers), meeting_date=date.fromisoformat(meeting) if isinstance(meeting, str) else meeting,
    )  # fmt: skip


def search_hits(
    ctx: ToolContext, query: str, types: list[str], project_ids: tuple[str, ...], top_k: int
) -> list[tuple[str, Hit]]:
    """Hybrid search within the narrowed scope (logged like any search), the hits that are evidence only (``rag.ask.evidence``)."""
    from rag.ask.evidence import evidence
    from rag.search.query_text import search_text
    from rag.search.service import run_search

    request = SearchRequest(query=query, types=types, project_ids=list(project_ids), top_k=top_k, mode="hybrid")
    ranked, _ = run_search(ctx.conn, ctx.embedder, ctx.settings, request.search_query(ctx.tenant_id))
    words = search_text(query) or query
    return current_first(evidence(ctx.conn, ctx.tenant_id, project_ids, words, ranked, ctx.settings.ask_min_evidence))


def _where(start_turn: int | None, end_turn: int | None, start_char: int, end_char: int) -> str:
    return f"turns {start_turn}-{end_turn}" if start_turn is not None else f"chars {start_char}-{end_char}"


# Shown on their own (meeting_date) or as the item's status: "superseded by [2]", not a row id.
_SHOWN_APART = ("meeting_date", "status", "superseded_by")


def run_search_tool(ctx: ToolContext, args: SearchArgs) -> ToolResult:
    hits = search_hits(ctx, args.query, list(args.types), ctx.narrow(args.project_ids), args.top_k)
    cites = [ctx.citations.cite(_passage_of(type_name, hit)) for type_name, hit in hits]
    decisions = {hit.id: cite["cite_as"] for (type_name, hit), cite in zip(hits, cites) if type_name == "decision"}
    states = standings(ctx.conn, ctx.tenant_id, hits, decisions)
    results = []
    for (type_name, hit), cite, state in zip(hits, cites, states):
        fields = {k: v for k, v in (hit.metadata or {}).items() if v not in (None, "", []) and k not in _SHOWN_APART}
        results.append(
            {
                **cite, "type": type_name, "document_id": hit.document_id, "project_id": hit.project_id,
                "source": hit.title or hit.source_uri, "meeting_date": (hit.metadata or {}).get("meeting_date"),
                "where": _where(hit.start_turn, hit.end_turn, hit.start_char, hit.end_char),
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
    results = [
        search_result(type_name, replace(hit, metadata=_standing_shown(hit.metadata, state)) if state else hit)
        for (type_name, hit), state in zip(hits, standings(ctx.conn, ctx.tenant_id, hits))
    ]
    passages = {id(result): _passage_of(type_name, hit) for result, (type_name, hit) in zip(results, hits)}

    ids: dict[str, str] = {}

    def number(merged: Any) -> int:  # a merged passage spans its own range: that range is what is cited
        span = {"start_char": merged.start_char, "end_char": merged.end_char,
                "start_turn": merged.start_turn, "end_turn": merged.end_turn}  # fmt: skip
        passage = replace(passages[id(merged.result)], **span)
        n = ctx.citations.add(passage)
        ids[f"[{n}]"] = passage.citation_id()
        return n

    text, cited = build_context(results, args.max_tokens, count_cl100k, number=number)
    if not cited:
        return ToolResult({"quoted_context": "", "note": "nothing relevant found in the meetings and documents"}, 0)
    return ToolResult({"quoted_context": ctx.redact(text), "passages": len(cited), "citation_ids": ids}, len(cited))


def run_list_projects(ctx: ToolContext, args: NoArgs) -> ToolResult:
    from rag.store.catalog import list_projects

    rows = [row for row in list_projects(ctx.conn, ctx.tenant_id) if ctx.in_scope(row["id"])]
    return ToolResult({"projects": rows}, len(rows))


def run_recent_meetings(ctx: ToolContext, args: MeetingsArgs) -> ToolResult:
    from rag.store.catalog import list_meetings

    projects = ctx.narrow([args.project_id] if args.project_id else [])
    rows = []
    for project in projects or (None,):
        rows += list_meetings(ctx.conn, ctx.tenant_id, project, args.limit)
    rows.sort(key=lambda r: r["meeting_date"] or date.min, reverse=True)
    meetings = [
        {"document_id": r["document_id"], "project_id": r["project_id"], "title": r["title"],
         "meeting_date": r["meeting_date"], "participants": r["participants"], "source": r["source_uri"]}
        for r in rows[: args.limit]
    ]  # fmt: skip
    return ToolResult({"meetings": meetings}, len(meetings))


def run_open_tasks(ctx: ToolContext, args: TasksArgs) -> ToolResult:
    from rag.search.tasks import list_tasks

    projects = ctx.narrow([args.project_id] if args.project_id else [])
    rows = []
    for project in projects or (None,):
        rows += list_tasks(ctx.conn, ctx.tenant_id, project_id=project, status=None if args.status == "any" else args.status,
                           assignee=args.assignee, limit=args.limit, due_after=args.due_after, due_before=args.due_before)  # fmt: skip
    rows.sort(key=lambda r: (r["due_date"] is None, r["due_date"] or date.min))  # several projects: soonest due first
    tasks = []
    for r in rows[: args.limit]:
        cite = ctx.citations.cite(item_passage(r, "task"))
        tasks.append(
            {**cite, "quoted_description": ctx.redact(r["description"]), "assignee": r["assignee"],
             "due_date": r["due_date"], "status": r["status"], "project_id": r["project_id"],
             "meeting_date": r["meeting_date"]}
        )  # fmt: skip
    return ToolResult({"tasks": tasks}, len(tasks))


def run_read_document(ctx: ToolContext, args: ReadDocumentArgs) -> ToolResult:
    row = ctx.conn.execute(
        """SELECT project_id, source_uri, title, meeting_date, body, turns FROM documents
           WHERE tenant_id = %s AND id = %s""",
        (ctx.tenant_id, args.document_id),
    ).fetchone()
    if row is None or not ctx.in_scope(row[0]):
        raise ToolError(f"document {args.document_id} not found")
    project_id, uri, title, meeting_date, body, turns = row
    body = body or ""
    start_turn = end_turn = None
    speakers: tuple[str, ...] = ()
    if turns and (args.start_turn is not None or args.end_turn is not None):
        last = len(turns) - 1
        start_turn = min(args.start_turn if args.start_turn is not None else 0, last)
        end_turn = min(max(args.end_turn if args.end_turn is not None else start_turn + 10, start_turn), last)
        start, end = turns[start_turn][1], turns[end_turn][2]
        speakers = tuple(dict.fromkeys(t[0] for t in turns[start_turn : end_turn + 1] if t[0]))
    else:
        start = min(args.start_char or 0, len(body))
        end = min(args.end_char if args.end_char is not None else start + PASSAGE_CHARS, len(body), start + PASSAGE_CHARS)
        end = max(end, start)
    if end - start > PASSAGE_CHARS:
        end = start + PASSAGE_CHARS
    text = body[start:end]
    if not text:
        raise ToolError("that range of the document is empty")
    cite = ctx.citations.cite(
        Passage(type="chunk", document_id=args.document_id, source_uri=uri, title=title, start_char=start, end_char=end,
                start_turn=start_turn, end_turn=end_turn, speakers=speakers, meeting_date=meeting_date)
    )  # fmt: skip
    return ToolResult(
        {**cite, "source": title or uri, "meeting_date": meeting_date, "where": _where(start_turn, end_turn, start, end),
         "quoted_text": ctx.redact(text), "document_length": len(body)},
        1,
    )  # fmt: skip


def _one_project(ctx: ToolContext, project_id: str | None) -> str:
    """The project a per-project tool reads: the one asked for (within scope and the tenant's), or the request's only one."""
    from rag.store.catalog import get_project

    projects = ctx.narrow([project_id] if project_id else [])
    if len(projects) != 1:
        raise ToolError("name the project_id (list_projects gives the projects this request may read)")
    if get_project(ctx.conn, ctx.tenant_id, projects[0]) is None:
        raise ToolError(f"project {projects[0]} not found")
    return projects[0]


_ITEM_TYPES = {"decisions": "decision", "risks": "risk", "tasks": "task"}


def item_passage(item: dict[str, Any], type_name: str) -> Passage:
    """The citable span of an extracted item (or a later meeting's statement) of ``rag.search.changes`` / ``brief``."""
    return Passage(
        type=type_name, document_id=item["document_id"], source_uri=item["source_uri"], title=item["source_title"],
        start_char=item["start_char"], end_char=item["end_char"], start_turn=item["start_turn"],
        end_turn=item["end_turn"], speakers=tuple(item["speakers"] or ()), meeting_date=_day(item["meeting_date"]),
    )  # fmt: skip


def _cited(ctx: ToolContext, item: dict[str, Any], type_name: str) -> dict[str, Any]:
    """An extracted item (or a later meeting's statement) as the model reads it, numbered in the request's citations."""
    shown: dict[str, Any] = {
        **ctx.citations.cite(item_passage(item, type_name)),
        "quoted_description": ctx.redact(item["description"]),
    }
    if item.get("evidence") and item["evidence"] != item["description"]:
        shown["quoted_evidence"] = ctx.redact(item["evidence"])
    for key in ("status", "owner", "assignee", "due_date", "overdue", "change", "new_value", "meeting_date", "speakers"):
        if item.get(key) not in (None, [], ""):
            shown[key] = item[key]
    return shown


def _day(value: Any) -> date | None:
    return date.fromisoformat(value) if isinstance(value, str) else value


def _cited_changes(ctx: ToolContext, changes: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    shown: dict[str, list[dict[str, Any]]] = {}
    for category, items in changes.items():
        if not items:
            continue
        kind = _ITEM_TYPES[category.split("_", 1)[0]]
        statement = category in ("risks_closed", "tasks_done", "tasks_cancelled", "tasks_handed_over", "tasks_rescheduled")
        listed = []
        for item in items:
            entry = _cited(ctx, item, "chunk" if statement else kind)
            for relation in ("supersedes", "superseded_by", "target"):
                refs = item.get(relation)
                if refs:
                    cited = [_cited(ctx, ref, kind) for ref in (refs if isinstance(refs, list) else [refs])]
                    entry[relation] = cited if isinstance(refs, list) else cited[0]
            listed.append(entry)
        shown[category] = listed
    return shown


def run_changes_since(ctx: ToolContext, args: ChangesArgs) -> ToolResult:
    from rag.search.changes import changes_between

    if args.until is not None and args.until < args.since:
        raise ToolError(f"until ({args.until}) is before since ({args.since})")
    project = _one_project(ctx, args.project_id)
    changes = changes_between(ctx.conn, ctx.tenant_id, project, since=args.since, until=args.until, limit=args.limit)
    shown = _cited_changes(ctx, changes)
    count = sum(len(items) for items in shown.values())
    data: dict[str, Any] = {"project_id": project, "since": args.since, "until": args.until, **shown}
    if not count:
        data["note"] = "no decision, risk or task was recorded in the meetings of this period"
    return ToolResult(data, count)


def run_project_brief(ctx: ToolContext, args: BriefArgs) -> ToolResult:
    from datetime import UTC, datetime

    from rag.search.brief import project_brief

    project = _one_project(ctx, args.project_id)
    brief = project_brief(ctx.conn, ctx.tenant_id, project, today=datetime.now(UTC).date(), days=args.days, limit=30)
    owners = [
        {"owner": group["owner"], "tasks": [_cited(ctx, task, "task") for task in group["tasks"]]}
        for group in brief["tasks_by_owner"]
    ]
    data = {
        "project_id": project, "today": brief["today"], "changes_since": brief["since"],
        "current_decisions": [_cited(ctx, d, "decision") for d in brief["decisions"]],
        "open_risks": [_cited(ctx, r, "risk") for r in brief["risks"]],
        "open_tasks_by_owner": owners, "overdue_tasks": brief["overdue_tasks"],
        "changes": _cited_changes(ctx, brief["changes"]),
    }  # fmt: skip
    count = len(data["current_decisions"]) + len(data["open_risks"]) + sum(len(o["tasks"]) for o in owners)
    return ToolResult(data, count + sum(len(items) for items in data["changes"].values()))


_ACROSS_CALLS = (
    "Numbers restart at [1] in every call; citation_id names the same passage in every call (a different "
    "passage, a different id)."
)

TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        Tool(
            "search",
            "Search the meetings and documents of the allowed projects (hybrid semantic + keyword). Returns numbered "
            "passages with their source and meeting date; cite a passage as its cite_as number, e.g. [3]. A decision, "
            "risk or task has its status as later meetings left it (current, superseded by [n] or on a date, open, "
            "closed, done); superseded decisions come last. " + _ACROSS_CALLS,
            SearchArgs,
            run_search_tool,
        ),
        Tool(
            "build_context",
            "Search and return one context of merged, numbered passages within a token budget; cite passages by "
            "their [n] numbers. citation_ids maps each [n] to the passage's citation_id, the same in every call.",
            ContextArgs,
            run_context_tool,
        ),
        Tool(
            "list_projects",
            "List the projects this request may read, with document and meeting counts.",
            NoArgs,
            run_list_projects,
            retrieves=False,
        ),  # fmt: skip
        Tool(
            "recent_meetings",
            "List the most recent meetings (transcripts), newest first.",
            MeetingsArgs,
            run_recent_meetings,
            retrieves=False,
        ),  # fmt: skip
        Tool(
            "open_tasks",
            "List the tasks still open after every meeting (assignee, due date, status: as later meetings left them), "
            "soonest due first, optionally one person's, those due in a date range, or those done, cancelled or blocked "
            "(status); each is citable by its cite_as number. " + _ACROSS_CALLS,
            TasksArgs,
            run_open_tasks,
        ),  # fmt: skip
        Tool(
            "changes_since",
            "What changed in one project between two meeting dates: decisions made (and the earlier ones they replaced), "
            "decisions superseded, risks raised and closed, tasks assigned, and tasks a later meeting reported done, "
            "cancelled, handed over or rescheduled; each item is citable by its cite_as number. " + _ACROSS_CALLS,
            ChangesArgs,
            run_changes_since,
        ),
        Tool(
            "project_brief",
            "Where one project stands today: its current decisions, open risks, open tasks by owner with due dates "
            "(overdue first) and what changed in the last N days; each item is citable by its cite_as number. " + _ACROSS_CALLS,
            BriefArgs,
            run_project_brief,
        ),
        Tool(
            "read_document",
            "Read a passage of one document: a transcript's turns start_turn..end_turn, or a character range. Use "
            "the document_id of a search result or a meeting. " + _ACROSS_CALLS,
            ReadDocumentArgs,
            run_read_document,
        ),
    )
}


def tool_schemas() -> dict[str, list[dict[str, Any]]]:
    """``GET /v1/tools``: every tool in OpenAI's and Anthropic's function-calling forms."""
    return {"openai": [t.openai() for t in TOOLS.values()], "anthropic": [t.anthropic() for t in TOOLS.values()]}
