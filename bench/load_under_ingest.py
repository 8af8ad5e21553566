"""Query load while transcripts are being ingested, and a PostgreSQL kill in the middle of an ingest.

Each run starts its own local stack with the real CLI (``rag up`` in a child process whose
environment sets RAG_LOCAL_DIR to a new folder and RAG_LOCAL_PG_PORT / _MOTO_PORT / _API_PORT
to free ports, never the defaults 54329 / 5059 / 8000), and stops it with ``rag down`` at the
end (``--keep`` leaves it running). Nothing touches the default ``.local`` stack.

Load under ingest (the default scenario)::

    .venv/bin/python bench/load_under_ingest.py --clients 1,20,50 --seconds 60 --limit 100

1. uploads ``--limit`` transcripts (``<domain>/<meeting>.txt`` under ``--transcripts``; the
   folder is cycled under distinct keys when it holds fewer) to ``projects/<domain>/...`` of
   the local bucket with boto3, without waiting for them;
2. meanwhile runs, for each number of ``--clients`` in turn, that many HTTP clients for
   ``--seconds`` against ``POST /v1/search`` (hybrid, top_k 10, one ingested project per
   request, varied questions); a request without an answer within ``--request-timeout`` is
   "hung";
3. then waits until every upload is ingested or failed and reports documents per minute
   under load, counts by status, the DLQ depth, and whether every transcript is found by a
   keyword search restricted to its document id.

PostgreSQL killed during an ingest::

    .venv/bin/python bench/load_under_ingest.py --kill-postgres --limit 100 --outage-seconds 20

uploads the transcripts, ``kill -9``s the stack's postmaster after ``--kill-after`` seconds,
starts PostgreSQL again after ``--outage-seconds``, waits until every message is ingested or
failed and the queue is empty (transient failures are retried after 30 s, 60 s, ... so this
takes minutes), and checks: DLQ depth 0, nothing lost, no half-written document (every
``raw_ingested`` document has ``chunk_count`` rows in ``chunks``, at least one), every
transcript searchable.

Short smoke runs::

    .venv/bin/python bench/load_under_ingest.py --clients 2 --seconds 5 --limit 5
    .venv/bin/python bench/load_under_ingest.py --kill-postgres --limit 5 --outage-seconds 5

Progress goes to stderr; the results go to stdout as Markdown tables (for the README).
Exit status 0 when every check passed, 1 otherwise, 2 when the stack could not be started (or restarted).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import psycopg

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRANSCRIPTS = REPO_ROOT.parent / "shared" / "eval" / "transcripts"
DEFAULT_PORTS = {54329, 5059, 8000}  # the default stack's (and the test suite's) ports: never ours
BUCKET = "rag-documents"
QUEUE = "rag-ingest"
API_KEY = "dev-local-key"
REGION = "us-east-1"
# Inherited settings that would point the child stack somewhere else than its own services.
STRIPPED_ENV = ("DATABASE_URL", "AWS_ENDPOINT_URL", "AWS_REGION", "AWS_PROFILE")
STRIPPED_PREFIXES = ("RAG_LOCAL_", "RAG_DATABASE_", "RAG_AWS_")
Question = tuple[str, str | None]  # a question, and the project it is about when known

QUESTIONS = [
    "What decisions were made about the budget?",
    "Who is responsible for the next steps?",
    "What were the main risks raised in the meeting?",
    "Summarize the discussion about the project timeline",
    "What did the team decide about the remote control design?",
    "Which problems did they have with the recording equipment?",
    "What was said about the speech recognition results?",
    "What are the action items for the next meeting?",
    "How did the group evaluate the prototype?",
    "What concerns were raised about costs?",
    "What did the professor suggest about the experiments?",
    "Why was the deadline moved?",
    "What was agreed about the user interface?",
    "Which features were dropped and why?",
    "What did the committee conclude about the proposal?",
    "How will the data be collected and stored?",
    "What did they say about the marketing strategy?",
    "What feedback was given on the presentation?",
    "What are the open questions left at the end?",
    "Who disagreed with the plan and what were their arguments?",
    "What was discussed about training the acoustic models?",
    "What did the project manager say about the schedule?",
    "How should the evaluation be organised?",
    "What were the results of the user survey?",
]


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --- the isolated stack ---------------------------------------------------------------


@dataclass(frozen=True)
class Stack:
    local_dir: Path
    pg_port: int
    moto_port: int
    api_port: int

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.moto_port}"

    @property
    def database_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.pg_port}/rag"

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    @property
    def pgdata(self) -> Path:
        return self.local_dir / "pgdata"

    @property
    def services_log(self) -> Path:
        return self.local_dir / "logs" / "services.log"

    def env(self) -> dict[str, str]:
        """The parent's environment, minus what points elsewhere, plus this stack's folder and ports."""
        env = {
            name: value
            for name, value in os.environ.items()
            if name not in STRIPPED_ENV and not name.startswith(STRIPPED_PREFIXES)
        }
        env.update(
            RAG_LOCAL_DIR=str(self.local_dir),
            RAG_LOCAL_PG_PORT=str(self.pg_port),
            RAG_LOCAL_MOTO_PORT=str(self.moto_port),
            RAG_LOCAL_API_PORT=str(self.api_port),
            RAG_LOCAL_BUCKET=BUCKET,
            RAG_LOCAL_QUEUE=QUEUE,
            RAG_API_KEYS=f"{API_KEY}=default",
            AWS_ACCESS_KEY_ID="testing",
            AWS_SECRET_ACCESS_KEY="testing",
            AWS_DEFAULT_REGION=REGION,
        )
        return env

    def shell_prefix(self) -> str:
        return (
            f"RAG_LOCAL_DIR={self.local_dir} RAG_LOCAL_PG_PORT={self.pg_port} "
            f"RAG_LOCAL_MOTO_PORT={self.moto_port} RAG_LOCAL_API_PORT={self.api_port}"
        )


def rag_command() -> list[str]:
    script = Path(sys.executable).with_name("rag")
    return [str(script)] if script.exists() else [sys.executable, "-m", "rag_local.cli"]


def run_rag(stack: Stack, *args: str, timeout: float = 600) -> int:
    """Run ``rag ARGS`` for this stack; its output goes to our stderr."""
    result = subprocess.run(
        [*rag_command(), *args],
        env=stack.env(),
        cwd=REPO_ROOT,
        stdout=sys.stderr,
        stderr=sys.stderr,
        stdin=subprocess.DEVNULL,
        timeout=timeout,
    )
    return result.returncode


def free_ports(count: int) -> list[int]:
    """``count`` distinct free ports on 127.0.0.1, none of them a default port."""
    sockets: list[socket.socket] = []
    try:
        while len(sockets) < count:
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            if sock.getsockname()[1] in DEFAULT_PORTS:
                sock.close()
                continue
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def make_stack(args: argparse.Namespace) -> tuple[Stack, bool]:
    """The stack's folder and ports; True when the folder is ours to delete afterwards."""
    created = args.local_dir is None
    local_dir = Path(tempfile.mkdtemp(prefix="rag-load-")) if created else args.local_dir.resolve()
    if local_dir == (REPO_ROOT / ".local").resolve():
        raise SystemExit("error: --local-dir must not be the default stack's .local folder")
    local_dir.mkdir(parents=True, exist_ok=True)
    ports = free_ports(3)
    pg, moto, api = (given or port for given, port in zip((args.pg_port, args.moto_port, args.api_port), ports))
    if {pg, moto, api} & DEFAULT_PORTS:
        raise SystemExit(f"error: ports {sorted(DEFAULT_PORTS)} belong to the default stack; choose others")
    return Stack(local_dir, pg, moto, api), created


@contextmanager
def running_stack(stack: Stack, keep: bool, up_timeout: float) -> Iterator[Stack]:
    """`rag up` for this stack, and `rag down` afterwards whatever happens (unless ``keep``)."""
    log(f"starting an isolated stack: {stack.shell_prefix()}")
    try:
        if run_rag(stack, "up", "--timeout", str(up_timeout), timeout=up_timeout + 120) != 0:
            raise StackError(f"`rag up` failed; see {stack.services_log}")
        yield stack
    except StackError:
        log(f"services log excerpt ({stack.services_log}):\n{log_excerpt(stack)}")
        raise
    finally:
        if keep:
            log(f"--keep: the stack keeps running; use or stop it with: {stack.shell_prefix()} .venv/bin/rag status|down")
        else:
            log("stopping the stack (rag down)")
            run_rag(stack, "down", timeout=120)


class StackError(RuntimeError):
    pass


def aws_client(stack: Stack, service: str) -> Any:
    return boto3.client(
        service,
        endpoint_url=stack.endpoint,
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


# --- uploads --------------------------------------------------------------------------


@dataclass(frozen=True)
class Upload:
    path: Path
    project: str
    key: str


def project_id(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "-", name)[:128] or "default"


def plan_uploads(folder: Path, limit: int) -> list[Upload]:
    """``limit`` uploads taking the domains in turn; past the folder's end, copies under distinct keys."""
    by_domain: dict[str, list[Path]] = {}
    for path in sorted(folder.glob("*/*.txt")):
        by_domain.setdefault(path.parent.name, []).append(path)
    if not by_domain:
        raise SystemExit(f"error: no <domain>/<meeting>.txt files under {folder}")
    interleaved: list[Path] = []
    for i in range(max(len(paths) for paths in by_domain.values())):
        interleaved.extend(paths[i] for paths in by_domain.values() if i < len(paths))
    uploads = []
    for i in range(limit):
        path = interleaved[i % len(interleaved)]
        copy = i // len(interleaved)
        project = project_id(path.parent.name)
        folder_part = f"copy-{copy}/" if copy else ""
        uploads.append(Upload(path, project, f"projects/{project}/{folder_part}{path.name}"))
    return uploads


def upload_all(stack: Stack, uploads: list[Upload]) -> datetime:
    """Put every file into the bucket, as `rag ingest` does (moto's gate mirrors each to disk); returns when it began."""
    s3 = aws_client(stack, "s3")
    started = datetime.now(UTC)
    for upload in uploads:
        s3.put_object(Bucket=BUCKET, Key=upload.key, Body=upload.path.read_bytes())
    log(f"uploaded {len(uploads)} transcripts to s3://{BUCKET}/projects/ ({len({u.project for u in uploads})} projects)")
    return started


# --- queue and database state ---------------------------------------------------------


@dataclass(frozen=True)
class QueueDepth:
    waiting: int
    in_flight: int
    delayed: int
    dlq: int

    @property
    def empty(self) -> bool:
        return self.waiting == 0 and self.in_flight == 0 and self.delayed == 0


def queue_depth(sqs: Any) -> QueueDepth:
    def attributes(name: str) -> dict[str, str]:
        url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
        return sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]

    main, dlq = attributes(QUEUE), attributes(f"{QUEUE}-dlq")
    return QueueDepth(
        waiting=int(main.get("ApproximateNumberOfMessages", 0)),
        in_flight=int(main.get("ApproximateNumberOfMessagesNotVisible", 0)),
        delayed=int(main.get("ApproximateNumberOfMessagesDelayed", 0)),
        dlq=int(dlq.get("ApproximateNumberOfMessages", 0)),
    )


@dataclass(frozen=True)
class DocumentRow:
    id: str
    key: str
    project: str
    status: str
    chunk_count: int
    error: str | None
    updated_at: datetime


def document_rows(stack: Stack, keys: list[str]) -> dict[str, DocumentRow] | None:
    """The rows of these keys, or None while the database cannot be reached."""
    try:
        with psycopg.connect(stack.database_url, connect_timeout=3) as conn:
            rows = conn.execute(
                "SELECT id::text, object_key, project_id, status, chunk_count, error, updated_at "
                "FROM documents WHERE bucket = %s AND object_key = ANY(%s)",
                (BUCKET, keys),
            ).fetchall()
    except psycopg.OperationalError:
        return None
    return {row[1]: DocumentRow(*row) for row in rows}


def status_counts(rows: dict[str, DocumentRow]) -> Counter[str]:
    return Counter(row.status for row in rows.values())


def describe(rows: dict[str, DocumentRow] | None, total: int, depth: QueueDepth | None) -> str:
    docs = "database unreachable" if rows is None else f"{len(rows)}/{total} processed {dict(status_counts(rows))}"
    queue = (
        "queue unreachable"
        if depth is None
        else f"queue {depth.waiting} waiting, {depth.in_flight} in flight, {depth.delayed} delayed; DLQ {depth.dlq}"
    )
    return f"{docs}; {queue}"


def safe_queue_depth(sqs: Any) -> QueueDepth | None:
    try:
        return queue_depth(sqs)
    except Exception as exc:  # moto is part of the stack under test: report, don't crash
        log(f"could not read the queue depth: {exc}")
        return None


def wait_until_settled(stack: Stack, keys: list[str], timeout: float, idle_give_up: float = 120) -> dict[str, DocumentRow]:
    """Poll until every key has a row and the queue is empty (or timeout; or the queue idle with rows missing)."""
    sqs = aws_client(stack, "sqs")
    deadline = time.monotonic() + timeout
    idle_since: float | None = None
    last_report = 0.0
    rows: dict[str, DocumentRow] = {}
    while True:
        current = document_rows(stack, keys)
        depth = safe_queue_depth(sqs)
        if current is not None:
            rows = current
        now = time.monotonic()
        if now - last_report >= 10:
            log(f"settling: {describe(current, len(keys), depth)}")
            last_report = now
        queue_empty = depth is not None and depth.empty
        if current is not None and len(current) == len(keys) and queue_empty:
            log(f"settled: {describe(current, len(keys), depth)}")
            return rows
        idle_since = (idle_since or now) if queue_empty else None
        if idle_since is not None and now - idle_since > idle_give_up:
            unprocessed = len(keys) - len(rows)
            log(f"the queue has been empty for {idle_give_up:.0f} s with {unprocessed} uploads unprocessed; giving up")
            return rows
        if now > deadline:
            log(f"not settled after {timeout:.0f} s: {describe(current, len(keys), depth)}")
            return rows
        time.sleep(2)


# --- HTTP load ------------------------------------------------------------------------


@dataclass
class LoadResult:
    clients: int
    elapsed: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)  # every request that got an answer
    ok: int = 0
    server_errors: int = 0
    other_errors: int = 0
    hung: int = 0
    samples: Counter[str] = field(default_factory=Counter)  # error kinds, for the log

    @property
    def requests(self) -> int:
        return self.ok + self.server_errors + self.other_errors + self.hung

    def percentile(self, q: float) -> float | None:
        if not self.latencies_ms:
            return None
        if len(self.latencies_ms) == 1:
            return self.latencies_ms[0]
        return statistics.quantiles(self.latencies_ms, n=100, method="inclusive")[int(q) - 1]


def post_json(url: str, body: dict[str, Any], timeout: float) -> tuple[int, dict[str, Any] | None]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {API_KEY}"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        exc.read()
        return exc.code, None


def is_timeout(exc: BaseException) -> bool:
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    return isinstance(reason, (TimeoutError, socket.timeout))


def one_search(stack: Stack, question: str, project: str, timeout: float, result: LoadResult, lock: threading.Lock) -> None:
    body = {"query": question, "project_ids": [project], "mode": "hybrid", "top_k": 10}
    started = time.perf_counter()
    outcome: str
    try:
        status, payload = post_json(f"{stack.api_url}/v1/search", body, timeout)
        if status == 200 and payload is not None and isinstance(payload.get("results"), list):
            outcome = "ok"
        else:
            outcome = f"HTTP {status}" if status != 200 else "200 without a results list"
    except Exception as exc:  # connection refused/reset, timeouts, malformed answers
        outcome = "hung" if is_timeout(exc) else type(getattr(exc, "reason", exc)).__name__
    elapsed_ms = (time.perf_counter() - started) * 1000
    with lock:
        if outcome == "hung":
            result.hung += 1
        else:
            result.latencies_ms.append(elapsed_ms)
            if outcome == "ok":
                result.ok += 1
            elif outcome.startswith("HTTP 5"):
                result.server_errors += 1
            else:
                result.other_errors += 1
        if outcome != "ok":
            result.samples[outcome] += 1


def run_load(
    stack: Stack, clients: int, seconds: float, timeout: float, questions: list[Question], projects: list[str]
) -> LoadResult:
    """``clients`` threads sending searches back to back for ``seconds``; a question about one of the
    ingested projects is asked of that project, any other of a random ingested project."""
    result = LoadResult(clients)
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def client(seed: int) -> None:
        rng = random.Random(seed)
        while time.monotonic() < deadline:
            question, about = rng.choice(questions)
            project = about if about in projects else rng.choice(projects)
            one_search(stack, question, project, timeout, result, lock)

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    result.elapsed = time.monotonic() - started
    return result


def load_questions(path: Path | None) -> list[Question]:
    """JSON lines with "query" (and "domain", as ../shared/eval/queries.jsonl) or plain lines; else a built-in set."""
    builtin: list[Question] = [(question, None) for question in QUESTIONS]
    if path is None or not path.exists():
        return builtin
    questions: list[Question] = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if line.startswith("{"):
            item = json.loads(line)
            text, domain = str(item.get("query") or "").strip(), item.get("domain")
            questions.append((text, project_id(domain) if domain else None))
        elif line:
            questions.append((line, None))
    return list(dict.fromkeys(q for q in questions if q[0])) or builtin


# --- checks after the fact ------------------------------------------------------------


def keyword_terms(content: str) -> str:
    """Three long words of a chunk (transcript markers like {vocalsound} left out)."""
    words = re.findall(r"[A-Za-z]{5,}", re.sub(r"\{[^}]*\}|\[[^\]]*\]", " ", content))
    longest = sorted(dict.fromkeys(w.lower() for w in words), key=len, reverse=True)[:3]
    return " ".join(longest) or content[:50]


def unsearchable(stack: Stack, rows: dict[str, DocumentRow], timeout: float) -> tuple[int, list[str]]:
    """Keyword-search each ingested document restricted to its id: (documents checked, keys not found)."""
    ingested = [row for row in rows.values() if row.status != "failed"]
    with psycopg.connect(stack.database_url) as conn:
        first_chunks = dict(
            conn.execute(
                "SELECT document_id::text, content FROM chunks WHERE document_id = ANY(%s::uuid[]) AND chunk_index = 0",
                ([row.id for row in ingested],),
            ).fetchall()
        )
    missing = []
    for row in ingested:
        terms = keyword_terms(first_chunks.get(row.id, row.key))
        body = {"query": terms, "document_ids": [row.id], "mode": "keyword", "top_k": 1}
        try:
            status, payload = post_json(f"{stack.api_url}/v1/search", body, timeout)
        except Exception as exc:
            status, payload = 0, None
            log(f"search for {row.key} failed: {exc}")
        results = (payload or {}).get("results") or []
        if status != 200 or not any(hit.get("document_id") == row.id for hit in results):
            missing.append(row.key)
    return len(ingested), missing


def half_written(stack: Stack) -> list[tuple[str, int, int]]:
    """(key, chunk_count, chunk rows) of every raw_ingested document whose chunks do not add up."""
    with psycopg.connect(stack.database_url) as conn:
        return conn.execute(
            """SELECT d.object_key, d.chunk_count, count(c.id)::int
                 FROM documents d LEFT JOIN chunks c ON c.document_id = d.id
                WHERE d.bucket = %s AND d.status = 'raw_ingested'
                GROUP BY d.id, d.object_key, d.chunk_count
               HAVING count(c.id) <> d.chunk_count OR count(c.id) = 0""",
            (BUCKET,),
        ).fetchall()


def log_excerpt(stack: Stack, lines: int = 25) -> str:
    """The services log's last lines that speak of failures, retries or dead letters."""
    if not stack.services_log.exists():
        return f"(no {stack.services_log})"
    pattern = re.compile(r"ERROR|WARNING|Traceback|retried|failed|dlq|dead", re.IGNORECASE)
    matching = [line for line in stack.services_log.read_text(errors="replace").splitlines() if pattern.search(line)]
    return "\n".join(line[:400] for line in matching[-lines:]) or "(no warnings or errors in the log)"


def logged_retries(stack: Stack) -> Counter[str]:
    """How often the services log records a retry: per message, and per whole batch (database down)."""
    text = stack.services_log.read_text(errors="replace") if stack.services_log.exists() else ""
    return Counter(
        message=text.count("transient failure; message retried"),
        batch=text.count("cannot reach the database; the whole batch is retried"),
    )


@dataclass
class Check:
    name: str
    value: str
    passed: bool | None  # None: informational


def ingest_checks(stack: Stack, uploads: list[Upload], rows: dict[str, DocumentRow], search_timeout: float) -> list[Check]:
    counts = status_counts(rows)
    lost = len(uploads) - len(rows)
    failed = {key: row.error for key, row in rows.items() if row.status == "failed"}
    for key, error in list(failed.items())[:10]:
        log(f"FAILED {key}: {error}")
    depth = safe_queue_depth(aws_client(stack, "sqs"))
    checked, missing = unsearchable(stack, rows, search_timeout)
    for key in missing[:10]:
        log(f"NOT SEARCHABLE {key}")
    by_status = ", ".join(f"{count} {status}" for status, count in sorted(counts.items())) or "none"
    return [
        Check("documents by status", f"{by_status} (of {len(uploads)} uploaded)", not failed),
        Check("uploads without a document row", str(lost), lost == 0),
        Check("DLQ depth", "unknown" if depth is None else str(depth.dlq), depth is not None and depth.dlq == 0),
        Check(
            "every transcript searchable (keyword, by document id)",
            f"{checked - len(missing)}/{checked}",
            not missing and checked > 0,
        ),
    ]


# --- scenarios ------------------------------------------------------------------------


def ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def load_table(results: list[LoadResult], timeout: float) -> str:
    lines = [
        f"| clients | requests | requests/s | 5xx | other errors | hung (> {timeout:.0f} s) | p50 ms | p95 ms | max ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.clients} | {r.requests:,} | {r.requests / r.elapsed if r.elapsed else 0:.1f} | {r.server_errors} | "
            f"{r.other_errors} | {r.hung} | {ms(r.percentile(50))} | {ms(r.percentile(95))} | "
            f"{ms(max(r.latencies_ms) if r.latencies_ms else None)} |"
        )
    return "\n".join(lines)


def checks_table(checks: list[Check]) -> str:
    verdict = {True: "pass", False: "**FAIL**", None: "-"}
    lines = ["| check | result | verdict |", "|---|---|---|"]
    lines += [f"| {c.name} | {c.value} | {verdict[c.passed]} |" for c in checks]
    return "\n".join(lines)


def ingest_rates(rows: dict[str, DocumentRow], started: datetime, load_ended: datetime) -> list[Check]:
    """Documents per minute from the first upload to the last document, and within the load window alone."""
    ingested = [row for row in rows.values() if row.status != "failed"]
    if not ingested:
        return [Check("ingest rate", "nothing ingested", False)]
    minutes = (max(row.updated_at for row in ingested) - started).total_seconds() / 60
    load_minutes = (load_ended - started).total_seconds() / 60
    during = sum(row.updated_at <= load_ended for row in ingested)
    return [
        Check(
            "ingest rate, first upload to last document",
            f"{len(ingested) / minutes:.1f} documents/min ({len(ingested)} in {minutes:.1f} min)",
            None,
        ),
        Check(
            "ingest rate while the query load ran",
            f"{during / load_minutes:.1f} documents/min ({during} in the {load_minutes:.1f} min of load)",
            None,
        ),
    ]


def scenario_load(stack: Stack, args: argparse.Namespace, uploads: list[Upload]) -> bool:
    keys = [u.key for u in uploads]
    projects = sorted({u.project for u in uploads})
    questions = load_questions(args.questions)
    source = args.questions if args.questions.exists() else "the built-in set"
    log(f"{len(questions)} questions from {source}; projects {', '.join(projects)}")
    started = upload_all(stack, uploads)
    results = []
    for clients in args.clients:
        log(f"load: {clients} clients for {args.seconds:.0f} s")
        result = run_load(stack, clients, args.seconds, args.request_timeout, questions, projects)
        results.append(result)
        errors = ", ".join(f"{kind} x{n}" for kind, n in result.samples.most_common(5)) or "no errors"
        log(
            f"  {result.requests} requests in {result.elapsed:.1f} s, p95 {ms(result.percentile(95))} ms, {errors}; "
            f"ingest: {describe(document_rows(stack, keys), len(keys), safe_queue_depth(aws_client(stack, 'sqs')))}"
        )
    load_ended = datetime.now(UTC)
    log("load done; waiting for the ingest to finish")
    rows = wait_until_settled(stack, keys, args.settle_timeout)
    checks = [*ingest_rates(rows, started, load_ended), *ingest_checks(stack, uploads, rows, args.request_timeout)]
    clean = all(r.server_errors == 0 and r.other_errors == 0 and r.hung == 0 for r in results)
    checks.append(Check("queries without 5xx, errors or hangs", "yes" if clean else "no", clean))
    passed = all(c.passed is not False for c in checks)
    cores = os.cpu_count()
    print(f"### Search under ingest ({len(uploads)} transcripts uploaded at once, {cores} cores, hybrid, top_k 10)\n")
    print(load_table(results, args.request_timeout))
    print()
    print(checks_table(checks))
    print(f"\n**{'PASS' if passed else 'FAIL'}**")
    return passed


def postmaster_pid(stack: Stack) -> int:
    """The postmaster's pid from postmaster.pid, after checking the file is this stack's server's."""
    try:
        lines = (stack.pgdata / "postmaster.pid").read_text().splitlines()
    except FileNotFoundError as exc:
        raise StackError(f"no {stack.pgdata}/postmaster.pid: PostgreSQL of this stack is not running") from exc
    if len(lines) < 4 or int(lines[3]) != stack.pg_port:
        raise StackError(f"{stack.pgdata}/postmaster.pid is not the server on port {stack.pg_port}; not killing it")
    return int(lines[0])


def kill_postgres(stack: Stack) -> None:
    pid = postmaster_pid(stack)
    os.kill(pid, signal.SIGKILL)
    log(f"kill -9 {pid} (the postmaster on port {stack.pg_port})")
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    log(f"warning: pid {pid} still exists 10 s after kill -9")


def start_postgres(stack: Stack, attempts: int = 15) -> None:
    """Start the server again as `rag up` does (rag_local.postgres.start runs it as its own OS user)."""
    from rag_local import postgres

    for attempt in range(1, attempts + 1):
        try:
            postgres.start(stack.pgdata, stack.pg_port, os.environ.get("RAG_LOCAL_PG_SHARED_BUFFERS"))
            log(f"PostgreSQL started again on port {stack.pg_port}")
            return
        except (subprocess.CalledProcessError, RuntimeError) as exc:
            log(f"start attempt {attempt} failed ({exc}); see {stack.pgdata}/server.log; retrying in 2 s")
            time.sleep(2)
    raise StackError(f"PostgreSQL did not start again; see {stack.pgdata}/server.log")


def scenario_kill(stack: Stack, args: argparse.Namespace, uploads: list[Upload]) -> bool:
    keys = [u.key for u in uploads]
    sqs = aws_client(stack, "sqs")
    upload_all(stack, uploads)
    time.sleep(args.kill_after)
    before = document_rows(stack, keys) or {}
    log(f"before the kill: {describe(before, len(keys), safe_queue_depth(sqs))}")
    kill_postgres(stack)
    outage_end = time.monotonic() + args.outage_seconds
    while time.monotonic() < outage_end:
        time.sleep(min(5, max(0.0, outage_end - time.monotonic())))
        log(f"outage: {describe(None, len(keys), safe_queue_depth(sqs))}")
    start_postgres(stack)
    rows = wait_until_settled(stack, keys, args.settle_timeout)
    broken = half_written(stack)
    for key, count, actual in broken[:10]:
        log(f"HALF-WRITTEN {key}: chunk_count {count}, {actual} chunk rows")
    retries = logged_retries(stack)
    checks = [
        Check("ingested before the kill", f"{len(before)} of {len(uploads)}", None),
        Check(
            "retries logged by the ingest handler",
            f"{retries['message']} messages backed off, {retries['batch']} batches refused (database down)",
            None,
        ),
        *ingest_checks(stack, uploads, rows, args.request_timeout),
        Check("no half-written document (chunk_count = chunk rows >= 1)", f"{len(broken)} half-written", not broken),
    ]
    passed = all(c.passed is not False for c in checks)
    if not passed:
        log(f"services log excerpt ({stack.services_log}):\n{log_excerpt(stack)}")
    print(
        f"### PostgreSQL killed during an ingest ({len(uploads)} transcripts, kill -9 after {args.kill_after:.0f} s, "
        f"down {args.outage_seconds:.0f} s)\n"
    )
    print(checks_table(checks))
    print(f"\n**{'PASS' if passed else 'FAIL'}**")
    return passed


# --- command line ---------------------------------------------------------------------


def client_counts(value: str) -> list[int]:
    try:
        counts = [int(part) for part in value.split(",") if part.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{value!r}: expected numbers separated by commas, e.g. 1,20,50") from exc
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError("every client count must be at least 1")
    return counts


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    data = parser.add_argument_group("what to ingest")
    data.add_argument(
        "--transcripts",
        type=Path,
        default=DEFAULT_TRANSCRIPTS,
        metavar="DIR",
        help="folder of <domain>/<meeting>.txt; each domain becomes a project "
        "(default ../shared/eval/transcripts, next to the repository)",
    )
    data.add_argument(
        "--limit",
        type=int,
        default=100,
        metavar="N",
        help="upload N transcripts; with fewer in the folder it is cycled under distinct keys "
        "(projects/<domain>/copy-<n>/...) (default 100)",
    )
    load = parser.add_argument_group("query load (default scenario)")
    load.add_argument(
        "--clients",
        type=client_counts,
        default=[1, 20, 50],
        metavar="N,N,...",
        help="parallel HTTP clients; one run per number, in turn (default 1,20,50)",
    )
    load.add_argument("--seconds", type=float, default=60, metavar="S", help="length of each run (default 60)")
    load.add_argument(
        "--request-timeout",
        type=float,
        default=30,
        metavar="S",
        help="client timeout per request; a request past it counts as hung (default 30)",
    )
    load.add_argument(
        "--questions",
        type=Path,
        metavar="FILE",
        help='questions: JSON lines with a "query" field, or one per line '
        "(default <transcripts>/../queries.jsonl if present, else a built-in set of 24)",
    )
    kill = parser.add_argument_group("PostgreSQL kill (instead of the query load)")
    kill.add_argument(
        "--kill-postgres",
        action="store_true",
        help="kill -9 the stack's postmaster during the ingest, restart it, check nothing is lost",
    )
    kill.add_argument("--kill-after", type=float, default=5, metavar="S", help="seconds after the uploads (default 5)")
    kill.add_argument("--outage-seconds", type=float, default=20, metavar="S", help="how long PostgreSQL stays down (default 20)")
    both = parser.add_argument_group("stack and waiting")
    both.add_argument(
        "--settle-timeout",
        type=float,
        default=900,
        metavar="S",
        help="how long to wait for every upload to be ingested or failed after the load or restart (default 900)",
    )
    both.add_argument(
        "--local-dir",
        type=Path,
        metavar="DIR",
        help="RAG_LOCAL_DIR of the stack (default: a new temporary folder, deleted at the end when every check "
        "passed and --keep is not given)",
    )
    both.add_argument("--pg-port", type=int, metavar="PORT", help="RAG_LOCAL_PG_PORT (default: a free port)")
    both.add_argument("--moto-port", type=int, metavar="PORT", help="RAG_LOCAL_MOTO_PORT (default: a free port)")
    both.add_argument("--api-port", type=int, metavar="PORT", help="RAG_LOCAL_API_PORT (default: a free port)")
    both.add_argument("--up-timeout", type=float, default=300, metavar="S", help="`rag up --timeout` (default 300)")
    both.add_argument(
        "--keep", action="store_true", help="leave the stack running (and its folder) afterwards; prints how to reach and stop it"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.limit < 1:
        raise SystemExit("error: --limit must be at least 1")
    if args.questions is None:
        args.questions = args.transcripts.parent / "queries.jsonl"
    uploads = plan_uploads(args.transcripts, args.limit)
    stack, created = make_stack(args)
    passed = False
    try:
        with running_stack(stack, args.keep, args.up_timeout):
            passed = scenario_kill(stack, args, uploads) if args.kill_postgres else scenario_load(stack, args, uploads)
    except StackError as exc:
        log(f"error: {exc}")
        return 2
    finally:
        if created and not args.keep:
            if passed:
                shutil.rmtree(stack.local_dir, ignore_errors=True)
            else:
                log(f"kept {stack.local_dir} for inspection (logs/services.log, pgdata/server.log)")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
