"""``rag search``, ``rag serve``, ``rag openapi`` and ``rag report``: the query API, its document and its log."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from rag.knowledge import NAMES
from rag_local.commands import Subparsers, fail

if TYPE_CHECKING:
    from rag.config import Settings


def register(subparsers: Subparsers) -> None:
    search = subparsers.add_parser("search", help="search through the local query API and print a table")
    search.add_argument("question")
    search.add_argument("--project", help="limit to one project")
    search.add_argument("--mode", choices=["semantic", "keyword", "hybrid"], default="hybrid", help="default hybrid")
    search.add_argument("--top-k", type=int, default=5, help="number of results (default 5)")
    search.add_argument(
        "--types", nargs="+", default=["chunk"], metavar="TYPE",
        help=", ".join(f"{name} (default)" if name == "chunk" else name for name in NAMES) + ", or all (one ranked list)",
    )  # fmt: skip
    search.add_argument("--api-key", help="API key (default: the first of RAG_API_KEYS)")
    search.set_defaults(func=search_command)

    serve = subparsers.add_parser("serve", help="serve the query API on 127.0.0.1 in the foreground (needs `rag up`)")
    serve.add_argument("--port", type=int, help="port (default RAG_LOCAL_API_PORT, 8000; `rag up` already serves there)")
    serve.set_defaults(func=serve_command)

    openapi = subparsers.add_parser("openapi", help="print the query API's OpenAPI document")
    openapi.set_defaults(func=openapi_command)

    report = subparsers.add_parser("report", help="summarize the query log: volume, latency, queries with low similarity")
    report.add_argument("--days", type=int, default=7, help="look back this many days (default 7)")
    report.add_argument("--low-similarity", type=float, default=0.35, help="threshold for 'low' (default 0.35)")
    report.set_defaults(func=report_command)


def search_command(args: argparse.Namespace, settings: Settings) -> int:
    from rag_local.api_client import ApiError, post

    body: dict[str, Any] = {"query": args.question, "mode": args.mode, "top_k": args.top_k, "types": args.types}
    if args.project:
        body["project_ids"] = [args.project]
    try:
        payload = post(settings, "/v1/search", body, api_key=args.api_key)
    except ApiError as exc:
        return fail(str(exc))
    results = payload["results"]
    if not results:
        print("no results")
        return 0
    print(f"{len(results)} results in {payload['took_ms']:.0f} ms ({args.mode})")
    for rank, hit in enumerate(results, 1):
        where = (
            f"turns {hit['start_turn']}-{hit['end_turn']}"
            if hit["start_turn"] is not None
            else f"chars {hit['start_char']}-{hit['end_char']}"
        )
        similarity = f"{hit['similarity']:.3f}" if hit["similarity"] is not None else "  -  "
        snippet = " ".join(hit["content"].split())[:150]
        kind = "" if hit["type"] == "chunk" else f"[{hit['type']}] "
        print(f"{rank:>2}. score {hit['score']:.4f}  sim {similarity}  {hit['source']['uri']}  ({where})\n    {kind}{snippet}")
    return 0


def serve_command(args: argparse.Namespace, settings: Settings) -> int:
    import logging

    from rag_local.api_server import make_server

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    server = make_server(settings, args.port)
    host, port = server.server_address[:2]
    assert isinstance(host, str)  # a TCP server's host (bytes only for Unix sockets)
    print(f"serving the query API on http://{host}:{port} (Ctrl-C to stop); keys: {', '.join(settings.api.key_tenants)}")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def openapi_command(args: argparse.Namespace, settings: Settings) -> int:
    from rag.api.routes import openapi_json

    print(openapi_json())
    return 0


def report_command(args: argparse.Namespace, settings: Settings) -> int:
    from rag.store.connection import connect, resolve_database_url
    from rag.store.query_log import query_report

    with connect(resolve_database_url(settings)) as conn:
        report = query_report(conn, days=args.days, low_similarity=args.low_similarity)
    print(f"queries in the last {args.days} days: {report.total}")
    for mode, count, p50, p95 in report.by_mode:
        print(f"  {mode:<9} {count:>6} queries   p50 {p50:7.1f} ms   p95 {p95:7.1f} ms")
    if report.low:
        print(f"queries whose best match stays below similarity {args.low_similarity} (documents may be missing):")
        for query, count, best in report.low:
            print(f"  {count:>4}x  best {best:.2f}  {query[:100]}")
    return 0
