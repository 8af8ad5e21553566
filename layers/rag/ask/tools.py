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

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from rag.ask.catalog_tools import run_list_projects, run_open_tasks, run_read_document, run_recent_meetings
from rag.ask.change_tools import run_changes_since, run_project_brief
from rag.ask.search_tools import run_context_tool, run_search_tool
from rag.ask.tool_args import (
    BriefArgs,
    ChangesArgs,
    ContextArgs,
    MeetingsArgs,
    NoArgs,
    ReadDocumentArgs,
    SearchArgs,
    TasksArgs,
    ToolArgs,
)
from rag.ask.tool_context import ToolContext, ToolError, ToolResult


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
