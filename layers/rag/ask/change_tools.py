"""The project tools: what changed between two meeting dates, and where a project stands today."""

from __future__ import annotations

from typing import Any

from rag.ask.tool_args import BriefArgs, ChangesArgs
from rag.ask.tool_context import ToolContext, ToolError, ToolResult
from rag.ask.tool_passages import item_passage


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
