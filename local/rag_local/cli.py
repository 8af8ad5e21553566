"""``rag``: run the whole system locally on embedded defaults (no AWS account, no API key)."""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from rag.config import Settings, get_settings

STOP_WAIT_SECONDS = 30  # rag down: how long the services get to finish the batch in hand before SIGKILL
INGEST_SUFFIXES = {".txt", ".vtt", ".srt", ".json", ".md", ".markdown", ".text"}


# --- process bookkeeping ------------------------------------------------------------


def _run_dir(settings: Settings) -> Path:
    path = settings.local_dir / "run"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _services_pid(settings: Settings) -> int | None:
    pid_file = _run_dir(settings) / "services.pid"
    if not pid_file.exists():
        return None
    pid = int(pid_file.read_text().strip() or 0)
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, ValueError):
        return None
    return None if _is_zombie(pid) else pid


def _is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    """A services process killed with -9 stays a zombie when nothing reaps it: it is not running."""
    try:
        import psutil
    except ImportError:
        return False
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _uses_embedded_database(settings: Settings) -> bool:
    return not settings.database_url and not settings.database_secret_arn


def _use_local_aws(settings: Settings) -> Settings:
    from rag_local.services import local_aws_environment

    for name, value in local_aws_environment(settings).items():
        os.environ.setdefault(name, value)
    get_settings.cache_clear()
    return get_settings()


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 1


# --- commands -----------------------------------------------------------------------


def cmd_up(args: argparse.Namespace, settings: Settings) -> int:
    from rag.store.connection import resolve_database_url
    from rag.store.migrations import migrate_database
    from rag_local import postgres

    if _uses_embedded_database(settings):
        started = postgres.start(settings.local_dir / "pgdata", settings.local_pg_port, settings.local_pg_shared_buffers)
        postgres.ensure_database(settings.local_pg_port, "rag")
        print(f"PostgreSQL   {'started' if started else 'already running'} on 127.0.0.1:{settings.local_pg_port}")
    applied = migrate_database(settings)
    print(f"migrations   {', '.join(applied) if applied else 'up to date'}")

    if _services_pid(settings) is None:
        log_dir = settings.local_dir / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        log_path = log_dir / "services.log"
        log = open(log_path, "a")  # appended: the log of a run that died is what explains it
        log.write(f"--- rag up {time.strftime('%Y-%m-%d %H:%M:%S')} ---\n")
        log.flush()
        start = log_path.stat().st_size  # this run's lines begin here
        process = subprocess.Popen(
            [sys.executable, "-m", "rag_local.services"],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # keeps running after `rag up` returns
            env={**os.environ, "POWERTOOLS_TRACE_DISABLED": "true", "POWERTOOLS_METRICS_NAMESPACE": "MeetingRag"},
        )
        (_run_dir(settings) / "services.pid").write_text(str(process.pid))
        deadline = time.monotonic() + args.timeout
        while "ready" not in _log_since(log_path, start).splitlines():
            if process.poll() is not None or time.monotonic() > deadline:
                print(_log_since(log_path, start)[-3000:], file=sys.stderr)
                return _fail(f"local services did not start; see {log_path}")
            time.sleep(0.3)
        print(f"services     started (pid {process.pid}, log {log_path})")
    else:
        print("services     already running")
    print(f"database     {resolve_database_url(settings)}")
    print(f"S3, SQS      {os.environ['AWS_ENDPOINT_URL']}  (moto; credentials 'testing')")
    print(f"query API    http://127.0.0.1:{settings.local_api_port}  (Authorization: Bearer <key>; keys from RAG_API_KEYS)")
    print(f"bucket       {settings.local_bucket}  (drop files under projects/<project_id>/...)")
    print(f"mirror       {settings.local_dir / 's3' / settings.local_bucket}  (the bucket on disk; `rag up` restores it)")
    print(f"queue        {settings.local_queue}  (+ DLQ {settings.local_queue}-dlq)")
    return 0


def _log_since(path: Path, offset: int) -> str:
    with open(path, "rb") as log:
        log.seek(offset)
        return log.read().decode(errors="replace")


def cmd_down(args: argparse.Namespace, settings: Settings) -> int:
    from rag_local import postgres

    pid = _services_pid(settings)
    if pid is not None:
        os.kill(pid, signal.SIGTERM)
        # The worker finishes the batch in hand first (embedding it can take a while).
        for _ in range(STOP_WAIT_SECONDS * 10):
            if not _is_running(pid):
                break
            time.sleep(0.1)
        else:
            with contextlib.suppress(ProcessLookupError):  # it ended just now
                os.kill(pid, signal.SIGKILL)
        print(f"services     stopped (pid {pid})")
    (_run_dir(settings) / "services.pid").unlink(missing_ok=True)
    if _uses_embedded_database(settings):
        stopped = postgres.stop(settings.local_dir / "pgdata")
        print(f"PostgreSQL   {'stopped' if stopped else 'was not running'}")
    return 0


def cmd_migrate(args: argparse.Namespace, settings: Settings) -> int:
    from rag.store.migrations import migrate_database

    applied = migrate_database(settings)
    print(f"applied: {', '.join(applied)}" if applied else "database is up to date")
    return 0


def _files_under(paths: list[str]) -> list[tuple[Path, str]]:
    """(file, path relative to its argument's folder) for every ingestible file."""
    found = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for file in sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith(".")):
                found.append((file, file.relative_to(path).as_posix()))
        elif path.is_file():
            found.append((path, path.name))
        else:
            raise FileNotFoundError(f"{raw}: no such file or folder")
    return found


def cmd_ingest(args: argparse.Namespace, settings: Settings) -> int:
    from tqdm import tqdm

    from rag.aws import s3_client
    from rag.events import ID_PATTERN
    from rag.store.connection import connect, resolve_database_url

    if not ID_PATTERN.match(args.project):
        return _fail(f"project id {args.project!r} must be 1-128 letters, digits, '.', '_' or '-'")
    if _services_pid(settings) is None:
        return _fail("local services are not running: run `rag up` first")
    try:
        files = _files_under(args.paths)
    except FileNotFoundError as exc:
        return _fail(str(exc))
    if not files:
        return _fail("no files to ingest")
    from rag_local.durable import Mirror, MirrorEntry, plain_etag

    s3 = s3_client(settings)
    mirror = Mirror.for_settings(settings)
    expected: dict[str, str] = {}
    for file, relative in tqdm(files, desc="upload", unit="file", disable=args.quiet):
        data = file.read_bytes()
        key = f"projects/{args.project}/{relative}"
        metadata = {"tenant": args.tenant} if args.tenant else {}
        response = s3.put_object(Bucket=settings.local_bucket, Key=key, Body=data, Metadata=metadata)
        # On disk at once: from here on the upload survives a kill of the services (rag_local.durable).
        mirror.write(MirrorEntry(key, plain_etag(response.get("ETag")), metadata=metadata), data)
        expected[key] = hashlib.sha256(data).hexdigest()

    done: dict[str, tuple[str, str | None]] = {}
    deadline = time.monotonic() + args.timeout
    with connect(resolve_database_url(settings)) as conn, tqdm(
        total=len(expected), desc="ingest", unit="file", disable=args.quiet
    ) as bar:
        while len(done) < len(expected) and time.monotonic() < deadline:
            rows = conn.execute(
                "SELECT object_key, content_sha256, status, error FROM documents WHERE bucket = %s AND object_key = ANY(%s)",
                (settings.local_bucket, [k for k in expected if k not in done]),
            ).fetchall()
            for key, sha, status, error in rows:
                if sha == expected[key]:
                    done[key] = (status, error)
                    bar.update(1)
            if _services_pid(settings) is None:
                return _fail("the local worker stopped; see .local/logs/services.log")
            time.sleep(0.3)
    failed = {k: v for k, v in done.items() if v[0] == "failed"}
    missing = [k for k in expected if k not in done]
    for key, (_, error) in failed.items():
        print(f"FAILED   {key}: {error}", file=sys.stderr)
    for key in missing:
        print(f"TIMEOUT  {key}: not processed within {args.timeout} s (see `rag status`)", file=sys.stderr)
    print(f"{len(done) - len(failed)} ingested, {len(failed)} failed, {len(missing)} not processed")
    return 1 if failed or missing else 0


def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    from rag.store.connection import connect, resolve_database_url
    from rag.store.status import pipeline_status

    with connect(resolve_database_url(settings)) as conn:
        status = pipeline_status(conn, model_id=settings.embedding_model_id)
    print("documents by status:")
    if not status.counts:
        print("  (none)")
    for (project, state), count in sorted(status.counts.items()):
        print(f"  {project:<24} {state:<14} {count:>6}")
    print(f"chunks: {status.chunks}")
    print(f"backfill pending ({settings.embedding_model_id}):")
    for stage, count in status.pending.items():
        print(f"  {stage:<10} {count:>6} documents")
    print("knowledge: " + ", ".join(f"{count} {name}" for name, count in status.knowledge.items()))
    if status.failures:
        print("failures:")
        for failure in status.failures:
            print(f"  {failure.source_uri}\n    {failure.error}")
    if status.backfill_failures:
        print("backfill failures (`rag backfill --retry-failed` tries exhausted ones again):")
        for failure in status.backfill_failures:
            state = "exhausted" if failure.exhausted else "will retry"
            print(f"  {failure.source_uri} [{failure.status}, {failure.attempts} attempts, {state}]\n    {failure.error}")
    if _services_pid(settings) is not None:
        from rag.aws import sqs_client

        sqs = sqs_client(settings)
        for name in (settings.local_queue, f"{settings.local_queue}-dlq"):
            url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
            attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
            print(
                f"queue {name}: {attrs['ApproximateNumberOfMessages']} waiting, "
                f"{attrs['ApproximateNumberOfMessagesNotVisible']} in flight"
            )
            if name.endswith("-dlq") and int(attrs["ApproximateNumberOfMessages"]) > 0:
                print(f"  (dead letters: fix the cause, then `rag redrive` moves them back to {settings.local_queue})")
    return 0


def cmd_redrive(args: argparse.Namespace, settings: Settings) -> int:
    from rag.aws import sqs_client
    from rag_local.services import move_dead_letters

    if _services_pid(settings) is None:
        return _fail("local services are not running: run `rag up` first")
    sqs = sqs_client(settings)
    dlq = f"{settings.local_queue}-dlq"
    moved = move_dead_letters(
        sqs, sqs.get_queue_url(QueueName=dlq)["QueueUrl"], sqs.get_queue_url(QueueName=settings.local_queue)["QueueUrl"]
    )
    print(f"moved {moved} messages from {dlq} back to {settings.local_queue}")
    return 0


def cmd_backfill(args: argparse.Namespace, settings: Settings) -> int:
    """Run the backfill stages through the same handlers the state machine calls."""
    from rag_local.backfill import run_backfill, run_backfill_in_state_machine

    stages = [args.stage] if args.stage else ["segment", "embed", "extract"]
    if args.retry_failed:
        from rag.backfill.documents import reset_attempts
        from rag.store.connection import connect, resolve_database_url

        with connect(resolve_database_url(settings)) as conn:
            print(f"{reset_attempts(conn)} documents with exhausted attempts are claimable again")
    if args.state_machine:
        return run_backfill_in_state_machine(stages, args.batch_size, args.max_iterations)
    return run_backfill(
        settings,
        stages,
        batch_size=args.batch_size,
        until_complete=args.run_until_complete,
        limit=args.limit,
        progress=not args.quiet,
    )


def cmd_search(args: argparse.Namespace, settings: Settings) -> int:
    import json
    import urllib.error
    import urllib.request

    key = args.api_key or next(iter(settings.api_key_tenants), "")
    body = {"query": args.question, "mode": args.mode, "top_k": args.top_k, "types": args.types}
    if args.project:
        body["project_ids"] = [args.project]
    request = urllib.request.Request(
        f"http://127.0.0.1:{settings.local_api_port}/v1/search",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            payload = json.load(response)
    except urllib.error.HTTPError as exc:
        return _fail(f"HTTP {exc.code}: {exc.read().decode(errors='replace')}")
    except urllib.error.URLError as exc:
        return _fail(f"the API is not reachable on 127.0.0.1:{settings.local_api_port} ({exc.reason}): run `rag up`")
    results = payload["results"]
    if not results:
        print("no results")
        return 0
    print(f"{len(results)} results in {payload['took_ms']:.0f} ms ({args.mode})")
    for rank, hit in enumerate(results, 1):
        where = f"turns {hit['start_turn']}-{hit['end_turn']}" if hit["start_turn"] is not None else f"chars {hit['start_char']}-{hit['end_char']}"
        similarity = f"{hit['similarity']:.3f}" if hit["similarity"] is not None else "  -  "
        snippet = " ".join(hit["content"].split())[:150]
        kind = "" if hit["type"] == "chunk" else f"[{hit['type']}] "
        print(f"{rank:>2}. score {hit['score']:.4f}  sim {similarity}  {hit['source']['uri']}  ({where})\n    {kind}{snippet}")
    return 0


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    import logging

    from rag_local.api_server import make_server

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    server = make_server(settings, args.port)
    host, port = server.server_address[:2]
    print(f"serving the query API on http://{host}:{port} (Ctrl-C to stop); keys: {', '.join(settings.api_key_tenants)}")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def cmd_openapi(args: argparse.Namespace, settings: Settings) -> int:
    from rag.api.routes import openapi_json

    print(openapi_json())
    return 0


def cmd_report(args: argparse.Namespace, settings: Settings) -> int:
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


def cmd_eval(args: argparse.Namespace, settings: Settings) -> int:
    import json

    from rag_local.evaluation.dataset import DatasetError, find_transcripts, load_queries
    from rag_local.evaluation.report import format_report
    from rag_local.evaluation.runner import MODES, SETTINGS, EvalError, run_eval

    try:
        transcripts = find_transcripts(args.transcripts)
        queries = load_queries(args.queries)
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
        )
    except (DatasetError, EvalError) as exc:
        return _fail(str(exc))
    print(format_report(report))
    if args.out:
        summary = args.out / "summary.json"
        summary.write_text(json.dumps(report.as_dict(), indent=1) + "\n")
        print(f"results and scores in {args.out}/ (summary.json, <setting>-<mode>.results.jsonl / .scores.json)")
    return 0


# --- parser -------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rag",
        description="Meeting RAG on your machine: embedded PostgreSQL + pgvector, moto S3/SQS, the local model.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    up = sub.add_parser("up", help="start PostgreSQL, S3, SQS and the queue worker in the background")
    up.add_argument("--timeout", type=float, default=120, help="seconds to wait for the services (default 120)")
    up.set_defaults(func=cmd_up)

    down = sub.add_parser("down", help="stop what `rag up` started")
    down.set_defaults(func=cmd_down)

    migrate = sub.add_parser("migrate", help="apply the SQL migrations of sql/ (a no-op when up to date)")
    migrate.set_defaults(func=cmd_migrate)

    ingest = sub.add_parser(
        "ingest",
        help="upload files or folders through S3 -> SQS -> the ingest handler and wait for the result",
        description="Uploads each file to projects/<project>/<path> in the local bucket, then waits until every "
        "file is ingested or failed. Exit status 1 if any failed.",
    )
    ingest.add_argument("paths", nargs="+", metavar="PATH", help="files or folders (folders are walked)")
    ingest.add_argument("--project", required=True, help="project id (the key's projects/<project>/ prefix)")
    ingest.add_argument("--tenant", help="tenant (S3 metadata 'tenant'); default: the configured default tenant")
    ingest.add_argument("--timeout", type=float, default=900, help="seconds to wait for processing (default 900)")
    ingest.add_argument("--quiet", action="store_true", help="no progress bars")
    ingest.set_defaults(func=cmd_ingest)

    status = sub.add_parser(
        "status", help="documents by status, backfill work pending per stage, knowledge counts, failures, queue depths"
    )
    status.set_defaults(func=cmd_status)

    redrive = sub.add_parser(
        "redrive",
        help="move the dead-letter queue's messages back to the ingest queue",
        description="Moves every message waiting in the DLQ (<queue>-dlq) back to the ingest queue, where the worker "
        "delivers it again with a fresh receive count, and prints how many moved. Fix what failed them first "
        "(`rag status` shows the failures and the queue depths).",
    )
    redrive.set_defaults(func=cmd_redrive)

    backfill = sub.add_parser(
        "backfill",
        help="run the backfill stages (segment, embed, extract) through their Lambda handlers",
        description="Runs the stage handlers of functions/backfill/handler.py in-process, as the state machine "
        "does: segment (raw_ingested -> segmented), embed (-> embedded), extract (-> extracted). Without "
        "--run-until-complete each stage runs one batch. Exit status 1 if a document failed.",
    )
    backfill.add_argument("--stage", choices=["segment", "embed", "extract"], help="only this stage (default: all, in order)")
    backfill.add_argument("--run-until-complete", action="store_true", help="repeat batches until nothing is left")
    backfill.add_argument("--limit", type=int, metavar="N", help="process at most N documents per stage")
    backfill.add_argument("--batch-size", type=int, default=10, metavar="N", help="documents per batch (default 10)")
    backfill.add_argument("--retry-failed", action="store_true", help="first make documents that exhausted their attempts claimable again")
    backfill.add_argument(
        "--state-machine", action="store_true",
        help="run the CDK-synthesized state machine in moto instead (needs the infra extra; implies until complete)",
    )  # fmt: skip
    backfill.add_argument("--max-iterations", type=int, default=100, help="loop bound per stage with --state-machine")
    backfill.add_argument("--quiet", action="store_true", help="no progress bars")
    backfill.set_defaults(func=cmd_backfill)

    search = sub.add_parser("search", help="search through the local query API and print a table")
    search.add_argument("question")
    search.add_argument("--project", help="limit to one project")
    search.add_argument("--mode", choices=["semantic", "keyword", "hybrid"], default="hybrid", help="default hybrid")
    search.add_argument("--top-k", type=int, default=5, help="number of results (default 5)")
    search.add_argument(
        "--types", nargs="+", default=["chunk"], metavar="TYPE",
        help="chunk (default), segment, decision, risk, opportunity, task, or all (one ranked list)",
    )  # fmt: skip
    search.add_argument("--api-key", help="API key (default: the first of RAG_API_KEYS)")
    search.set_defaults(func=cmd_search)

    serve = sub.add_parser("serve", help="serve the query API on 127.0.0.1 in the foreground (needs `rag up`)")
    serve.add_argument("--port", type=int, help="port (default RAG_LOCAL_API_PORT, 8000; `rag up` already serves there)")
    serve.set_defaults(func=cmd_serve)

    openapi = sub.add_parser("openapi", help="print the query API's OpenAPI document")
    openapi.set_defaults(func=cmd_openapi)

    report = sub.add_parser("report", help="summarize the query log: volume, latency, queries with low similarity")
    report.add_argument("--days", type=int, default=7, help="look back this many days (default 7)")
    report.add_argument("--low-similarity", type=float, default=0.35, help="threshold for 'low' (default 0.35)")
    report.set_defaults(func=cmd_report)

    evaluate = sub.add_parser(
        "eval",
        help="measure retrieval quality on graded transcripts through the real ingest and query handlers",
        description="Ingests DIR/<project>/<meeting_id>.txt into a database of its own (reused while nothing that "
        "shapes the rows changes), runs every query of FILE through POST /v1/search, and reports recall@1/5/10, "
        "MRR@10, nDCG@10, coverage@10 and the mean hit size in turns, overall and per project.",
    )
    evaluate.add_argument("--transcripts", type=Path, required=True, metavar="DIR", help="<project>/<meeting_id>.txt files")
    evaluate.add_argument("--queries", type=Path, required=True, metavar="FILE",
                          help='JSON lines: {"qid", "meeting_id", "domain", "query", "relevant_turns": [[s, e], ...]}')
    evaluate.add_argument("--mode", choices=["semantic", "keyword", "hybrid", "all"], default="all", help="default all")
    evaluate.add_argument("--setting", choices=["meeting", "project", "both"], default="both",
                          help="meeting: search the query's own meeting; project: its whole project (default both)")
    evaluate.add_argument("--out", type=Path, metavar="DIR", help="write <setting>-<mode>.results.jsonl/.scores.json here")
    evaluate.add_argument("--top-k", type=int, default=10, help="hits per query (default 10)")
    evaluate.add_argument("--fresh", action="store_true", help="re-ingest everything into a new database")
    evaluate.add_argument("--quiet", action="store_true", help="no progress bars")
    evaluate.set_defaults(func=cmd_eval)

    from rag_local.commands import ask as ask_command, mcp as mcp_command

    for command in (ask_command, mcp_command):
        command.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    settings = _use_local_aws(get_settings())
    try:
        return args.func(args, settings)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # the CLI's last line of defence: a readable message, not a traceback
        import psycopg

        if isinstance(exc, psycopg.OperationalError):
            return _fail(f"cannot reach the database ({exc}); is it running? try `rag up`")
        raise


if __name__ == "__main__":
    sys.exit(main())
