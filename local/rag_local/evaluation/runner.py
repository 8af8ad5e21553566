"""Run an evaluation end to end: ingest through S3 -> SQS -> the ingest handler, search through the query handler.

Everything runs in this process on the same code as in AWS: moto (in memory) holds the
bucket and the queue with the bucket's notifications, the local worker's ``poll_once``
hands SQS batches to ``functions/ingest/handler.py``, and every query is an API Gateway
v2 event for ``functions/query/handler.py`` (``POST /v1/search``). The data goes to a
database of its own, named after everything that shapes the ingested rows (embedding
model, chunk settings, the parsing/chunking/storage code, the migrations): a second run
with nothing changed reuses it, and the sha256 no-op skips files already ingested.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag.config import REPO_ROOT, Settings
from rag_local.evaluation.asking import AnswerableQuestion, AskingScores, UnanswerableQuery, run_asking
from rag_local.evaluation.dataset import EvalQuery, Transcript
from rag_local.evaluation.metrics import Hit, aggregate, score_query

MODES = ("semantic", "keyword", "hybrid")
SETTINGS = ("meeting", "project")
EVAL_BUCKET = "rag-eval"
EVAL_QUEUE = "rag-eval-ingest"
EVAL_TENANT = "eval"
# Code whose change changes the ingested rows (and so needs a fresh database).
INGEST_CODE = (
    "layers/rag/chunking.py", "layers/rag/parsing", "layers/rag/index_text.py", "layers/rag/embedding",
    "layers/rag/ingest.py", "layers/rag/store", "sql",
)  # fmt: skip


class EvalError(RuntimeError):
    """The evaluation cannot go on; the message says why."""


@dataclass
class RunScores:
    setting: str
    mode: str
    scores: dict[str, Any]
    errors: list[str] = field(default_factory=list)


@dataclass
class EvalReport:
    database: str
    documents: int
    chunks: int
    ingest_seconds: float
    failed_documents: dict[str, str]
    skipped_queries: list[str]
    runs: list[RunScores]
    asking: AskingScores | None = None

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def ingest_fingerprint(settings: Settings) -> str:
    """A short hash of everything that shapes the ingested rows."""
    digest = hashlib.sha256()
    digest.update(f"{settings.embedding.model_id}|{settings.ingest.chunk_tokens}|{settings.ingest.chunk_overlap_tokens}".encode())
    for name in INGEST_CODE:
        path = REPO_ROOT / name
        for file in sorted(path.rglob("*.py") if path.is_dir() else [path]) + sorted(
            path.rglob("*.sql") if path.is_dir() else []
        ):
            digest.update(file.relative_to(REPO_ROOT).as_posix().encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()[:12]


@contextlib.contextmanager
def eval_database(settings: Settings, name: str, *, fresh: bool = False) -> Iterator[str]:
    """The database ``name`` on DATABASE_URL's server or the embedded one (started if needed)."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    from rag_local import postgres

    pgdata = (REPO_ROOT / settings.local.dir / "pgdata").resolve()
    started = False
    if settings.database.url:
        server = settings.database.url
    else:
        started = postgres.start(pgdata, settings.local.pg_port)
        server = postgres.server_url(settings.local.pg_port)
    try:
        with psycopg.connect(server, autocommit=True) as admin:
            if fresh:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            if admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is None:
                admin.execute(f'CREATE DATABASE "{name}"')
        yield make_conninfo(server, dbname=name)
    finally:
        if started:
            postgres.stop(pgdata)


@contextlib.contextmanager
def handler_environment(database_url: str) -> Iterator[None]:
    """The handlers' environment for this run: the eval database, in-memory AWS, quiet logs and metrics."""
    from rag import aws
    from rag.config import get_settings
    from rag.store.connection import close_pool

    overrides = {
        "DATABASE_URL": database_url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
        "POWERTOOLS_METRICS_DISABLED": "true",
        "POWERTOOLS_TRACE_DISABLED": "true",
    }
    saved = {name: os.environ.get(name) for name in [*overrides, "AWS_ENDPOINT_URL", "RAG_AWS_ENDPOINT_URL"]}
    os.environ.update(overrides)
    os.environ.pop("AWS_ENDPOINT_URL", None)
    os.environ.pop("RAG_AWS_ENDPOINT_URL", None)

    def reset() -> None:
        get_settings.cache_clear()
        aws._client.cache_clear()
        close_pool()

    reset()
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        reset()


def ingest(transcripts: list[Transcript], database_url: str, *, progress: bool) -> tuple[dict[str, str], dict[str, str]]:
    """Upload to the in-memory bucket, deliver the queue to the ingest handler; (meeting -> document id, failures)."""
    from moto import mock_aws
    from tqdm import tqdm

    from rag.aws import s3_client, sqs_client
    from rag.config import get_settings
    from rag.store import documents as repo
    from rag.store.connection import connect
    from rag_local.lambdas import load_handler_module
    from rag_local.services import create_ingest_resources
    from rag_local.worker import poll_once

    settings = get_settings()
    handler = load_handler_module("ingest").lambda_handler
    with mock_aws():
        s3, sqs = s3_client(settings), sqs_client(settings)
        queue = create_ingest_resources(s3, sqs, EVAL_BUCKET, EVAL_QUEUE, settings.aws.region)
        sqs.purge_queue(QueueUrl=queue.url)  # S3's test event; no object change
        for transcript in tqdm(transcripts, desc="upload", unit="file", disable=not progress):
            s3.put_object(Bucket=EVAL_BUCKET, Key=object_key(transcript), Body=transcript.path.read_bytes())
        failed_messages = 0
        with tqdm(total=len(transcripts), desc="ingest", unit="file", disable=not progress) as bar:
            while (delivery := poll_once(sqs, queue.url, queue.arn, handler, wait_seconds=0)).received:
                bar.update(delivery.received - delivery.failed)
                failed_messages += delivery.failed
        if failed_messages:
            raise EvalError(f"{failed_messages} ingest message(s) failed; the handler's log above says why")

    keys = {object_key(t): t for t in transcripts}
    with connect(database_url) as conn:
        rows = conn.execute("SELECT object_key, id, status, error FROM documents WHERE bucket = %s", (EVAL_BUCKET,)).fetchall()
        for key, *_ in rows:
            if key not in keys:  # a transcript removed from the folder since the last run
                repo.delete_by_key(conn, EVAL_BUCKET, key)
    documents = {keys[key].meeting_id: str(doc_id) for key, doc_id, status, _ in rows if key in keys and status != "failed"}
    failures = {keys[key].meeting_id: error for key, _, status, error in rows if key in keys and status == "failed"}
    return documents, failures


def object_key(transcript: Transcript) -> str:
    """Where the eval uploads a transcript: its tenant is the key's (the ingest contract)."""
    return f"tenants/{EVAL_TENANT}/{transcript.key}"


def search(handler: Any, body: dict[str, Any]) -> dict[str, Any]:
    """One ``POST /v1/search`` through the query handler, as API Gateway would call it."""
    from rag_local.api_server import http_api_event
    from rag_local.lambdas import LocalContext

    event = http_api_event(
        "POST", "/v1/search", {"Content-Type": "application/json"}, json.dumps(body).encode(), EVAL_TENANT, "eval"
    )
    response = handler(event, LocalContext(function_name="query"))
    payload: dict[str, Any] = json.loads(response["body"])
    if response["statusCode"] != 200:
        raise EvalError(f"search answered {response['statusCode']}: {payload.get('message', payload)}")
    return payload


def run_queries(
    queries: list[EvalQuery], documents: dict[str, str], setting: str, mode: str, *, top_k: int, progress: bool
) -> tuple[list[dict[str, Any]], list[str]]:
    """The ranked hits of every query (score.py's results format), and the errors."""
    from tqdm import tqdm

    from rag_local.lambdas import load_handler_module

    handler = load_handler_module("query").lambda_handler
    meeting_of = {doc_id: meeting for meeting, doc_id in documents.items()}
    results, errors = [], []
    for query in tqdm(queries, desc=f"{setting}/{mode}", unit="query", disable=not progress, leave=False):
        body: dict[str, Any] = {"query": query.query, "mode": mode, "top_k": top_k, "project_ids": [query.domain]}
        if setting == "meeting":
            body["document_ids"] = [documents[query.meeting_id]]
        try:
            found = search(handler, body)["results"]
        except EvalError as exc:
            errors.append(f"{query.qid}: {exc}")
            found = []
        hits = [
            {"meeting_id": meeting_of[r["document_id"]], "start_turn": r["start_turn"], "end_turn": r["end_turn"], "score": r["score"]}
            for r in found
            if r["start_turn"] is not None and r["document_id"] in meeting_of
        ]  # fmt: skip
        results.append({"qid": query.qid, "hits": hits})
    return results, errors


def score_results(queries: list[EvalQuery], results: list[dict[str, Any]]) -> dict[str, Any]:
    hits_of = {r["qid"]: [Hit(h["meeting_id"], h["start_turn"], h["end_turn"], h["score"]) for h in r["hits"]] for r in results}
    per_query = [(q.domain, score_query(q.meeting_id, q.relevant_turns, hits_of.get(q.qid, []))) for q in queries]
    return aggregate(per_query)


def run_eval(
    transcripts: list[Transcript],
    queries: list[EvalQuery],
    settings: Settings,
    *,
    modes: tuple[str, ...] = MODES,
    settings_to_run: tuple[str, ...] = SETTINGS,
    out: Path | None = None,
    top_k: int = 10,
    fresh: bool = False,
    progress: bool = True,
    database: str | None = None,
    unanswerable: list[UnanswerableQuery] | None = None,
) -> EvalReport:
    """Ingest ``transcripts``, run ``queries`` in every setting and mode, score; write files to ``out``.

    With ``unanswerable``: also ask every query and every unanswerable question (``rag_local.evaluation.asking``).
    """
    from rag.store.connection import connect
    from rag.store.migrations import migrate_database

    name = database or f"rag_eval_{ingest_fingerprint(settings)}"
    with eval_database(settings, name, fresh=fresh) as url, handler_environment(url):
        migrate_database(settings, url)
        started = time.perf_counter()
        documents, failures = ingest(transcripts, url, progress=progress)
        ingest_seconds = time.perf_counter() - started
        with connect(url) as conn:
            (chunks,) = conn.execute("SELECT count(*) FROM chunks").fetchone() or (0,)
        answerable = [q for q in queries if q.meeting_id in documents]
        skipped = [q.qid for q in queries if q.meeting_id not in documents]
        if not answerable:
            raise EvalError("no query names a meeting of the transcripts folder")
        runs = []
        for setting in settings_to_run:
            for mode in modes:
                results, errors = run_queries(answerable, documents, setting, mode, top_k=top_k, progress=progress)
                scores = {**score_results(answerable, results), "setting": setting, "mode": mode, "skipped": skipped}
                runs.append(RunScores(setting, mode, scores, errors))
                if out is not None:
                    out.mkdir(parents=True, exist_ok=True)
                    with (out / f"{setting}-{mode}.results.jsonl").open("w") as file:
                        file.writelines(json.dumps(r) + "\n" for r in results)
                    (out / f"{setting}-{mode}.scores.json").write_text(json.dumps(scores, indent=1) + "\n")
        asking = None
        if unanswerable is not None:
            asked = [
                AnswerableQuestion(q.qid, q.domain, q.query, documents[q.meeting_id], list(q.relevant_turns)) for q in answerable
            ]
            asking = run_asking(asked, unanswerable, EVAL_TENANT, progress=progress)
            if out is not None:
                (out / "asking.json").write_text(json.dumps(asking.as_dict(), indent=1) + "\n")
    for error in (e for run in runs for e in run.errors):
        print(f"query failed: {error}", file=sys.stderr)
    return EvalReport(name, len(documents), chunks, ingest_seconds, failures, skipped, runs, asking)
