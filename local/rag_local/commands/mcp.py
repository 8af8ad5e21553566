"""``rag mcp``: the query API's tools over MCP on stdio, for desktop chat clients."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rag.config import Settings


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "mcp",
        help="serve the tools (search, context, projects, meetings, tasks, documents) over MCP on stdio",
        description="An MCP server on stdin/stdout for desktop chat clients, with the tools of /v1/ask run against the "
        "local database as the tenant of --api-key (default: the first of RAG_API_KEYS). Needs `rag up`.",
    )
    parser.add_argument("--api-key", help="API key whose tenant the tools run as (default: the first of RAG_API_KEYS)")
    parser.add_argument("--project", action="append", dest="projects", metavar="P", help="limit to a project (repeatable)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from rag.ask.mcp_server import serve_stdio

    keys = settings.api.key_tenants
    key = args.api_key or next(iter(keys), "")
    if key not in keys:
        import sys

        print("rag: unknown API key (RAG_API_KEYS)", file=sys.stderr)
        return 1
    serve_stdio(settings, keys[key], tuple(args.projects or ()))
    return 0
