"""``rag reembed``: move the corpus to another embedding model, the steps the deployed state machine runs."""

from __future__ import annotations

import argparse
import json
import time
from typing import TYPE_CHECKING, Any

from rag_local.commands import Subparsers, fail

if TYPE_CHECKING:
    from rag.config import Settings

# How often a Bedrock batch job is asked whether it is done (jobs take minutes to hours).
POLL_SECONDS = 60


def register(subparsers: Subparsers) -> None:
    reembed = subparsers.add_parser(
        "reembed",
        help="move every vector to another embedding model, switching searches at once when done",
        description="Plans a run (manifests of every embedded row's text), processes each manifest (Bedrock's batch "
        "inference when RAG_REEMBED_BUCKET names a bucket and the target is a Bedrock model; else the target model "
        "here), imports the vectors beside the old ones, embeds what no manifest covered, and swaps the columns in "
        "one transaction: searches move to the new model at once and never compare the two. The target is "
        "--to-provider/--to-model/--to-dimension/--to-runtime, or RAG_REEMBED_*. Afterwards, name the new model in "
        "RAG_EMBEDDING_* (or keep RAG_REEMBED_* set) for every process that uses the database.",
    )
    reembed.add_argument("--to-provider", choices=["local", "openai", "bedrock"], help="the target's provider")
    reembed.add_argument("--to-model", help="the target's model (default: the provider's)")
    reembed.add_argument("--to-dimension", type=int, help="the target's vector size (default: the model's own)")
    reembed.add_argument("--to-runtime", choices=["torch", "onnx", "onnx-int8"], help="a local target's runtime")
    reembed.add_argument("--status", action="store_true", help="print the database's model and the latest run, as JSON")
    reembed.add_argument("--quiet", action="store_true", help="no progress lines")
    reembed.set_defaults(func=reembed_command)


def target_of(args: argparse.Namespace, settings: Settings) -> Settings:
    values = {
        name: value
        for name, value in (
            ("reembed_provider", args.to_provider), ("reembed_model", args.to_model),
            ("reembed_dimension", args.to_dimension), ("reembed_runtime", args.to_runtime),
        )
        if value is not None
    }  # fmt: skip
    return settings.with_values(**values) if values else settings


def reembed_command(args: argparse.Namespace, settings: Settings) -> int:
    from rag.reembed import steps
    from rag.store.connection import connect, resolve_database_url

    settings = target_of(args, settings)
    with connect(resolve_database_url(settings)) as conn:
        if args.status:
            print(json.dumps(steps.status(conn), default=str, indent=2))
            return 0
        if settings.reembed.provider is None:
            return fail("name the target model: --to-provider (and --to-model/--to-dimension/--to-runtime) or RAG_REEMBED_*")
        return run(conn, settings, say=(lambda _: None) if args.quiet else print)


def run(conn: Any, settings: Settings, say: Any = print) -> int:
    """Every step of a run, in order, in this process."""
    from rag.reembed import steps

    jobs, store = steps.jobs_for(settings)

    def step(event: dict[str, Any]) -> dict[str, Any]:
        return steps.run_step(conn, settings, jobs, store, event)

    planned = step({"action": "plan"})
    if planned["run_id"] is None:
        say(f"nothing to do: the database is in {steps.status(conn)['model']}, or a run is under way (--status)")
        return 0
    run_id, manifests = planned["run_id"], planned["manifests"]
    say(f"run {run_id}: {len(manifests)} manifests, {planned['records']} rows")
    try:
        for number, item in enumerate(manifests, 1):
            submitted = step({"action": "submit", **item})
            while (checked := step({"action": "check", **submitted}))["status"] == "running":
                say(f"manifest {number}/{len(manifests)}: batch job {submitted['job_arn']} running")
                time.sleep(POLL_SECONDS)  # the local engine is done at submit: only Bedrock's jobs are waited for
            if checked["status"] == "failed":
                raise RuntimeError(f"manifest {item['manifest']}: {checked['message']}")
            imported = step({"action": "import", **submitted})
            say(f"manifest {number}/{len(manifests)}: {imported['imported']} rows, {imported['failed_records']} left to finish")
        while (finished := step({"action": "finish", "run_id": run_id}))["status"] == "catching_up":
            say(f"caught up {finished['caught_up']} rows, {finished['remaining']} to go")
    except Exception as exc:
        step({"action": "fail", "run_id": run_id, "error": f"{type(exc).__name__}: {exc}"})
        return fail(f"run {run_id} failed: {exc}")
    say(f"switched to {steps.status(conn)['model']} ({finished['caught_up']} rows embedded online at the end)")
    say(f"From now on, every process that uses this database embeds in it: set {embedding_variables(settings)}")
    return 0


def embedding_variables(settings: Settings) -> str:
    """The RAG_EMBEDDING_* values naming the target (or keep RAG_REEMBED_* set)."""
    from rag.store.embedding_space import target_settings

    target = target_settings(settings)
    assert target is not None  # a run switched to it
    embedding = target.embedding
    values = {"PROVIDER": embedding.provider, "MODEL": embedding.resolved_model, "DIMENSION": embedding.resolved_dimension}
    if embedding.provider == "local":
        values["RUNTIME"] = embedding.runtime
    return " ".join(f"RAG_EMBEDDING_{name}={value}" for name, value in values.items())
