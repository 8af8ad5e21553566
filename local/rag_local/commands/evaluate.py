"""``rag eval``: retrieval quality on graded transcripts, through the real ingest and query handlers."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from rag_local.commands import Subparsers, fail

if TYPE_CHECKING:
    from rag.config import Settings


def register(subparsers: Subparsers) -> None:
    evaluate = subparsers.add_parser(
        "eval",
        help="measure retrieval quality on graded transcripts through the real ingest and query handlers",
        description="Ingests DIR/<project>/<meeting_id>.txt into a database of its own (reused while nothing that "
        "shapes the rows changes), runs every query of FILE through POST /v1/search, and reports recall@1/5/10, "
        "MRR@10, nDCG@10, coverage@10 and the mean hit size in turns, overall and per project.",
    )
    evaluate.add_argument("--transcripts", type=Path, required=True, metavar="DIR", help="<project>/<meeting_id>.txt files")
    evaluate.add_argument(
        "--queries",
        type=Path,
        required=True,
        metavar="FILE",
        help='JSON lines: {"qid", "meeting_id", "domain", "query", "relevant_turns": [[s, e], ...]}',
    )
    evaluate.add_argument("--mode", choices=["semantic", "keyword", "hybrid", "all"], default="all", help="default all")
    evaluate.add_argument(
        "--setting",
        choices=["meeting", "project", "both"],
        default="both",
        help="meeting: search the query's own meeting; project: its whole project (default both)",
    )
    evaluate.add_argument("--out", type=Path, metavar="DIR", help="write <setting>-<mode>.results.jsonl/.scores.json here")
    evaluate.add_argument("--top-k", type=int, default=10, help="hits per query (default 10)")
    evaluate.add_argument(
        "--asking",
        type=Path,
        metavar="FILE",
        help="also ask (POST /v1/ask, extractive) every query and every question of FILE, JSON lines of questions no"
        ' meeting discussed ({"qid", "domain", "query"}), and report how often each is answered "nothing found"',
    )
    evaluate.add_argument("--fresh", action="store_true", help="re-ingest everything into a new database")
    evaluate.add_argument("--quiet", action="store_true", help="no progress bars")
    evaluate.set_defaults(func=eval_command)


def eval_command(args: argparse.Namespace, settings: Settings) -> int:
    import json

    from rag_local.evaluation.asking import load_unanswerable
    from rag_local.evaluation.dataset import DatasetError, find_transcripts, load_queries
    from rag_local.evaluation.report import format_report
    from rag_local.evaluation.runner import MODES, SETTINGS, EvalError, run_eval

    try:
        transcripts = find_transcripts(args.transcripts)
        queries = load_queries(args.queries)
        unanswerable = load_unanswerable(args.asking) if args.asking else None
        report = run_eval(
            transcripts,
            queries,
            settings,
            modes=MODES if args.mode == "all" else (args.mode,),
            settings_to_run=SETTINGS if args.setting == "both" else (args.setting,),
            out=args.out,
            top_k=args.top_k,
            fresh=args.fresh,
            progress=not args.quiet,
            unanswerable=unanswerable,
        )
    except (DatasetError, EvalError) as exc:
        return fail(str(exc))
    print(format_report(report))
    if args.out:
        summary = args.out / "summary.json"
        summary.write_text(json.dumps(report.as_dict(), indent=1) + "\n")
        print(f"results and scores in {args.out}/ (summary.json, <setting>-<mode>.results.jsonl / .scores.json)")
    return 0
