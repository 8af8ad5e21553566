"""``rag backfill``: the backfill stages (segment, embed, extract) through their Lambda handlers."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rag_local.commands import Subparsers

if TYPE_CHECKING:
    from rag.config import Settings
    from rag.store.backfill_queue import StageName


def register(subparsers: Subparsers) -> None:
    backfill = subparsers.add_parser(
        "backfill",
        help="run the backfill stages (segment, embed, extract) through their Lambda handlers",
        description="Runs the stage handlers of functions/backfill/handler.py in-process, as the state machine "
        "does: segment (raw_ingested -> segmented), embed (-> embedded), extract (-> extracted), each stage "
        "batch after batch until nothing is pending (--one-batch: one batch per stage), with a progress bar. "
        "`rag up`'s worker runs the same after it ingested files. Exit status 1 if a document failed.",
    )
    backfill.add_argument("--stage", choices=["segment", "embed", "extract"], help="only this stage (default: all, in order)")
    backfill.add_argument(
        "--one-batch", action="store_true", help="run one batch per stage, then stop (default: until nothing is pending)"
    )
    backfill.add_argument(
        "--run-until-complete", action="store_true", help=argparse.SUPPRESS
    )  # accepted as before: until complete is the default
    backfill.add_argument("--limit", type=int, metavar="N", help="process at most N documents per stage")
    backfill.add_argument("--batch-size", type=int, default=10, metavar="N", help="documents per batch (default 10)")
    backfill.add_argument(
        "--retry-failed", action="store_true", help="first make documents that exhausted their attempts claimable again"
    )
    backfill.add_argument(
        "--state-machine", action="store_true",
        help="run the CDK-synthesized state machine in moto instead (needs the infra extra; implies until complete)",
    )  # fmt: skip
    backfill.add_argument("--max-iterations", type=int, default=100, help="loop bound per stage with --state-machine")
    backfill.add_argument("--quiet", action="store_true", help="no progress bars")
    backfill.set_defaults(func=backfill_command)


def backfill_command(args: argparse.Namespace, settings: Settings) -> int:
    """Run the backfill stages through the same handlers the state machine calls."""
    from rag_local.backfill import STAGES, run_backfill, run_backfill_in_state_machine

    stages: tuple[StageName, ...] = (args.stage,) if args.stage else STAGES
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
        until_complete=not args.one_batch,
        limit=args.limit,
        progress=not args.quiet,
    )
