"""``rag changes``, ``rag brief`` and ``rag tasks``: what changed in a project, where it stands, its tasks.

``rag changes --project P --since D [--until D]`` prints GET /v1/projects/P/changes as cited
Markdown lines; ``rag brief --project P [--days N]`` prints GET /v1/projects/P/brief?format=markdown;
``rag tasks`` prints GET /v1/tasks (by project, status, owner, due date), one cited line each.
``--json`` prints the API's JSON instead. Exit status 1 on an HTTP error (an unknown project is 404).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date
from typing import TYPE_CHECKING
from urllib.parse import quote, urlencode

from rag_local.commands import Subparsers

if TYPE_CHECKING:
    from rag.config import Settings


def register(subparsers: Subparsers) -> None:
    changes = subparsers.add_parser(
        "changes",
        help="what a project's meetings decided, superseded, raised, closed, assigned and completed since a date",
        description="Prints GET /v1/projects/P/changes of the local API (rag up): each item cited to its meeting and turns.",
    )
    changes.add_argument("--project", required=True, help="the project")
    changes.add_argument("--since", required=True, type=date.fromisoformat, help="first meeting date, YYYY-MM-DD (inclusive)")
    changes.add_argument("--until", type=date.fromisoformat, help="last meeting date, YYYY-MM-DD (inclusive; default: no end)")
    changes.add_argument("--limit", type=int, default=50, help="at most this many items per list (1-200, default 50)")
    _output_options(changes)
    changes.set_defaults(func=changes_command)

    brief = subparsers.add_parser(
        "brief",
        help="a project's brief: current decisions, open risks, open tasks by owner, what changed lately",
        description="Prints GET /v1/projects/P/brief of the local API (rag up) as Markdown, every line cited.",
    )
    brief.add_argument("--project", required=True, help="the project")
    brief.add_argument("--days", type=int, default=14, help="what changed in the last N days (1-366, default 14)")
    _output_options(brief)
    brief.set_defaults(func=brief_command)

    tasks = subparsers.add_parser(
        "tasks",
        help="extracted tasks as later meetings left them, soonest due first, by project, status, owner or due date",
        description="Prints GET /v1/tasks of the local API (rag up): one line per task, cited to its meeting and turns.",
    )
    tasks.add_argument("--project", help="one project")
    tasks.add_argument("--status", choices=["open", "done", "blocked", "cancelled"], help="only tasks in this status")
    tasks.add_argument("--assignee", help="only this person's tasks")
    tasks.add_argument("--due-after", type=date.fromisoformat, help="due on or after this day, YYYY-MM-DD")
    tasks.add_argument("--due-before", type=date.fromisoformat, help="due on or before this day, YYYY-MM-DD")
    tasks.add_argument("--limit", type=int, default=50, help="1-500 (default 50)")
    _output_options(tasks)
    tasks.set_defaults(func=tasks_command)


def _output_options(parser: argparse.ArgumentParser) -> None:
    """What every command of the local API prints (its text or its JSON) and with which key."""
    parser.add_argument("--json", action="store_true", help="print the API's JSON")
    parser.add_argument("--api-key", help="API key (default: the first of RAG_API_KEYS)")


def changes_command(args: argparse.Namespace, settings: Settings) -> int:
    from rag.search.brief import changes_markdown
    from rag.search.changes import CATEGORIES

    query = {"since": args.since.isoformat(), "limit": args.limit, **({"until": args.until.isoformat()} if args.until else {})}
    body = _get(settings, f"/v1/projects/{quote(args.project)}/changes?{urlencode(query)}", args.api_key)
    if body is None:
        return 1
    if args.json:
        print(body)
        return 0
    payload = json.loads(body)
    span = f"{payload['since']} to {payload['until'] or 'now'}"
    lines = changes_markdown({name: payload[name] for name in CATEGORIES})
    print(f"## What changed in {payload['project_id']}, meetings of {span}")
    print("\n".join(lines) if lines else "\nnothing recorded in the meetings of this period")
    return 0


def brief_command(args: argparse.Namespace, settings: Settings) -> int:
    query = urlencode({"days": args.days, **({} if args.json else {"format": "markdown"})})
    body = _get(settings, f"/v1/projects/{quote(args.project)}/brief?{query}", args.api_key)
    if body is None:
        return 1
    print(body, end="" if body.endswith("\n") else "\n")
    return 0


def tasks_command(args: argparse.Namespace, settings: Settings) -> int:
    from rag.search.brief import cite

    query = {"project_id": args.project, "status": args.status, "assignee": args.assignee, "limit": args.limit,
             "due_after": args.due_after, "due_before": args.due_before}  # fmt: skip
    body = _get(settings, f"/v1/tasks?{urlencode({k: str(v) for k, v in query.items() if v is not None})}", args.api_key)
    if body is None:
        return 1
    if args.json:
        print(body)
        return 0
    found = json.loads(body)["tasks"]
    for task in found:
        owner = task["assignee"] or "no owner named"
        due = f"due {task['due_date']}" if task["due_date"] else "no due date"
        print(f"- [{task['status']}] {owner}, {due}: {' '.join(task['description'].split())} {cite(task)}")
    if not found:
        print("no tasks")
    return 0


def _get(settings: Settings, path: str, api_key: str | None) -> str | None:
    from rag_local.api_client import ApiError, get

    try:
        return get(settings, path, api_key=api_key)
    except ApiError as exc:
        print(f"rag: {exc}", file=sys.stderr)
        return None
