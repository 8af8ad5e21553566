"""``rag ask "question" --project P``: POST /v1/ask on the local API, the answer and its citations."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rag.config import Settings


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "ask",
        help="ask a question: a cited answer through the local API's POST /v1/ask",
        description="Asks the local query API (rag up). With RAG_LLM_PROVIDER=openai or bedrock the chat model answers "
        "by calling the API's tools; without one (the default) the answer is extractive: the most relevant sentences, "
        "each cited. Exit status 1 on an HTTP error.",
    )
    parser.add_argument("question")
    parser.add_argument("--project", action="append", dest="projects", metavar="P", help="limit to a project (repeatable)")
    parser.add_argument("--max-tool-calls", type=int, default=4, help="1-8 (default 4)")
    parser.add_argument("--json", action="store_true", help="print the response as JSON")
    parser.add_argument("--api-key", help="API key (default: the first of RAG_API_KEYS)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from rag_local.api_client import ApiError, post

    body: dict[str, Any] = {"question": args.question, "max_tool_calls": args.max_tool_calls}
    if args.projects:
        body["project_ids"] = args.projects
    try:
        payload = post(settings, "/v1/ask", body, api_key=args.api_key)
    except ApiError as exc:
        print(f"rag: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(payload, indent=2))
        return 0
    print(payload["answer"])
    if payload["citations"]:
        print()
    for c in payload["citations"]:
        where = (
            f"turn {c['start_turn']}"
            if c["start_turn"] == c["end_turn"] and c["start_turn"] is not None
            else (
                f"turns {c['start_turn']}-{c['end_turn']}"
                if c["start_turn"] is not None
                else f"chars {c['start_char']}-{c['end_char']}"
            )
        )
        print(f"[{c['n']}] {c['source']['uri']} ({where}{', ' + c['meeting_date'] if c['meeting_date'] else ''})")
    calls = ", ".join(f"{t['name']} ({t['result_count']})" for t in payload["tool_calls"])
    note = f"; degraded: {payload['degraded']}" if payload.get("degraded") else ""
    print(f"\n{payload['mode']}, {payload['took_ms']:.0f} ms{', tools: ' + calls if calls else ''}{note}")
    return 0
