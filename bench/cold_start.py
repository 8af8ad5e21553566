"""Cold start of each Lambda function, from the artifacts that ship: the handler's import and the first request.

    .venv/bin/python bench/cold_start.py [--runs 7] [--functions query ingest ...] [--baseline PATH] [--json]

Builds the layer and the function assets as the CDK app does (tests/artifact/harness.py: the prod stage's
template, its handlers and environments) and starts each function in fresh CPython 3.12 processes with only
its asset, the layer and the runtime's boto3 on the path, against a fresh database on the local PostgreSQL
(DATABASE_URL, else the server of `rag up`, started if needed), moto and the fake model endpoints. Per function
and process: ``import`` is the handler module's import inside the process (Lambda's init, less the runtime's own
start), ``process`` the same seen from outside (interpreter start included), ``first`` the first invocation:

- migrate: CloudFormation's Update of the migrations resource (nothing to apply)
- ingest: an SQS batch with one new transcript (S3's notification from moto)
- backfill-*: the stage's first batch as the state machine sends it (the corpus is backfilled already)
- query: POST /v1/search, hybrid (the default), a new question, through the JWT authorizer's event

``--baseline PATH`` measures another checkout in the same run (``git worktree add /tmp/before <commit>``; it
must hold tests/artifact/harness.py), alternating the two per process so both see the same machine.
Reports medians over ``--runs`` processes (and the range).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
# Ingest last: the documents it adds would otherwise be the first backfill batch of whichever checkout came first.
FUNCTIONS = ("migrate", "backfill-segment", "backfill-embed", "backfill-extract", "query", "ingest")
CORPUS = sorted((REPO / "examples" / "transcripts").iterdir())
TRANSCRIPT = "Dana: The pilot starts on Monday with two stores.\nLee: Then we review the numbers on Friday.\n"


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def describe(repo: Path, workdir: Path) -> dict[str, Any]:
    """The artifacts of the checkout at ``repo`` (built by its own code, in a process of its own), as JSON."""
    script = (
        "import json, sys\n"
        f"sys.path[:0] = [{str(repo)!r}, {str(repo / 'layers')!r}]  # its infra and library, not the installed ones\n"
        "from pathlib import Path\n"
        "from dataclasses import asdict\n"
        "from tests.artifact.harness import build_artifacts\n"
        f"artifacts = build_artifacts(Path({str(workdir)!r}))\n"
        "print(json.dumps(asdict(artifacts), default=str))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=repo, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"building the artifacts of {repo} failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def load_artifacts(data: dict[str, Any]) -> Any:
    from tests.artifact.harness import Artifacts, FunctionSpec

    functions = {name: FunctionSpec(**{**spec, "asset": Path(spec["asset"])}) for name, spec in data["functions"].items()}
    return Artifacts(data["python"], Path(data["layer"]), Path(data["runtime"]), functions, data["template"])


def server_url(stack: ExitStack) -> str:
    """DATABASE_URL's server, else the local one of `rag up` (started here if it is not running, stopped after)."""
    from rag.config import Settings
    from rag_local import postgres

    settings = Settings()
    if settings.database.url:
        return settings.database.url
    pgdata = (REPO / settings.local.dir / "pgdata").resolve()
    if postgres.start(pgdata, settings.local.pg_port):
        stack.callback(postgres.stop, pgdata)
    return postgres.server_url(settings.local.pg_port)


def first_request(name: str, stack: Any) -> Any:
    """The event of ``name``'s measured first request."""
    from infra.constructs.backfill_state_machine import PROGRESS_FIELDS
    from tests.artifact.harness import cloudformation_event, http_event, receive_all, sqs_event

    services = stack.services
    if name == "migrate":
        properties = stack.artifacts.resource_properties("Custom::MeetingRagMigrations")
        properties.pop("ServiceToken", None)
        return cloudformation_event("Update", properties, old=properties)
    if name == "ingest":
        key = f"tenants/acme/projects/bench/{uuid.uuid4().hex[:8]}.txt"
        services.client("s3").put_object(Bucket=services.bucket, Key=key, Body=TRANSCRIPT.encode())
        return sqs_event(receive_all(services, 1), services.queue_arn)
    if name.startswith("backfill-"):
        return {"stage": name.removeprefix("backfill-"), "batch_size": 10, "previous": dict.fromkeys(PROGRESS_FIELDS, 0)}
    if name == "query":  # a question not asked before: its embedding is not cached yet
        question = f"what did we decide about the battery for release {uuid.uuid4().hex[:6]}?"
        return http_event("POST", "/v1/search", {"query": question, "top_k": 5})
    raise ValueError(f"no first request for {name}")


def prepare(stack: Any) -> None:
    """Schema, a small corpus and its backfill: what a stack holds when its functions start cold."""
    from infra.constructs.backfill_state_machine import PROGRESS_FIELDS
    from tests.artifact.harness import cloudformation_event, receive_all, sqs_event

    services = stack.services
    properties = stack.artifacts.resource_properties("Custom::MeetingRagMigrations")
    properties.pop("ServiceToken", None)
    with stack.function("migrate", label="setup") as migrate:
        migrate.invoke(cloudformation_event("Create", properties)).value()
    s3 = services.client("s3")
    for path in CORPUS:
        s3.put_object(Bucket=services.bucket, Key=f"tenants/acme/projects/remote/{path.name}", Body=path.read_bytes())
    with stack.function("ingest", label="setup") as ingest:
        event = sqs_event(receive_all(services, len(CORPUS) + 1), services.queue_arn)  # + S3's test event
        assert ingest.invoke(event).value() == {"batchItemFailures": []}
    for stage in ("segment", "embed", "extract"):
        with stack.function(f"backfill-{stage}", label="setup") as function:
            request = {"stage": stage, "batch_size": 10, "previous": dict.fromkeys(PROGRESS_FIELDS, 0)}
            function.invoke(request).value()
    stack.cold_starts.clear()


def measure(stack: Any, name: str) -> dict[str, float]:
    event = first_request(name, stack)
    with stack.function(name) as process:
        invocation = process.invoke(event)
        result = invocation.value()
    if name == "query":
        assert result["statusCode"] == 200, result
    cold = stack.cold_starts.pop()
    return {"import": cold.import_ms, "process": cold.process_ms, "first": cold.first_request_ms}


def summary(samples: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    return {
        metric: {
            "median": round(statistics.median(s[metric] for s in samples), 1),
            "min": round(min(s[metric] for s in samples), 1),
            "max": round(max(s[metric] for s in samples), 1),
        }
        for metric in ("import", "process", "first")
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7, help="fresh processes per function and checkout (default 7)")
    parser.add_argument("--functions", nargs="+", choices=FUNCTIONS, default=list(FUNCTIONS), metavar="NAME",
                        help=f"functions to measure (default all: {' '.join(FUNCTIONS)})")  # fmt: skip
    parser.add_argument("--baseline", type=Path, help="another checkout to measure in the same run (e.g. a git worktree)")
    parser.add_argument("--json", action="store_true", help="print the measurements as JSON")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(REPO))  # this checkout's harness, fakes and infra
    for name, value in (
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_DEFAULT_REGION", "us-east-1"),
    ):
        os.environ.setdefault(name, value)  # this process's clients of moto
    from tests.artifact.harness import Stack, build_artifacts, running_services

    checkouts = {"after": REPO}
    if args.baseline:
        checkouts = {"before": args.baseline.resolve(), **checkouts}
    with ExitStack() as cleanup, tempfile.TemporaryDirectory(prefix="cold-start-") as workdir:
        artifacts = {}
        for label, repo in checkouts.items():
            progress(f"building the artifacts of {repo} ({label}) ...")
            started = time.perf_counter()
            folder = Path(workdir) / label
            artifacts[label] = build_artifacts(folder) if repo == REPO else load_artifacts(describe(repo, folder))
            progress(f"  done in {time.perf_counter() - started:.0f} s")
        # Lambda's runtime is the environment, not the artifact: every checkout runs on this checkout's stand-in.
        artifacts = {label: replace(a, runtime=artifacts["after"].runtime) for label, a in artifacts.items()}
        url = server_url(cleanup)
        services = cleanup.enter_context(running_services(url))
        stacks = {label: Stack(a, services, Path(workdir) / f"logs-{label}") for label, a in artifacts.items()}
        for stack in stacks.values():
            stack.logs.mkdir()
        progress("preparing the stack: schema, corpus, backfill ...")
        prepare(stacks["after"])
        samples: dict[str, dict[str, list[dict[str, float]]]] = {label: {} for label in stacks}
        for name in args.functions:
            for run in range(args.runs):
                order = list(stacks) if run % 2 == 0 else list(reversed(stacks))  # neither always goes first
                for label in order:
                    sample = measure(stacks[label], name)
                    samples[label].setdefault(name, []).append(sample)
                    progress(
                        f"{name:17} run {run + 1}/{args.runs} {label:6} import {sample['import']:6.0f} ms"
                        f"  process {sample['process']:6.0f} ms  first request {sample['first']:6.0f} ms"
                    )
    report = {label: {name: summary(runs) for name, runs in by_function.items()} for label, by_function in samples.items()}
    if args.json:
        print(json.dumps({"runs": args.runs, "checkouts": {k: str(v) for k, v in checkouts.items()}, "report": report}, indent=2))
        return 0
    labels = list(report)
    print(f"median of {args.runs} fresh processes (min-max); ms")
    header = "".join(f"{'import ' + label:>22}" for label in labels) + "".join(f"{'first ' + label:>22}" for label in labels)
    print(f"{'function':18}{header}")
    for name in args.functions:
        cells = [report[label][name]["import"] for label in labels] + [report[label][name]["first"] for label in labels]
        print(f"{name:18}" + "".join(f"{c['median']:>8.0f} ({c['min']:.0f}-{c['max']:.0f})".rjust(22) for c in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
