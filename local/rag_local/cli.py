"""``rag``: run the whole system locally on embedded defaults (no AWS account, no API key).

The subcommands live in ``rag_local.commands``, one module per group; ``COMMANDS`` lists them in
the order ``rag --help`` shows them.
"""

from __future__ import annotations

import argparse
import os
import sys
from types import ModuleType

from rag.config import Settings, get_settings
from rag_local.commands import (
    ask,
    backfill,
    evaluate,
    fail,
    ingest,
    mcp,
    migrate,
    project,
    query_api,
    reembed,
    services,
    smoke,
)  # fmt: skip

COMMANDS: tuple[ModuleType, ...] = (
    services, migrate, ingest, backfill, reembed, query_api, project, evaluate, ask, mcp, smoke,
)  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rag",
        description="Meeting RAG on your machine: embedded PostgreSQL + pgvector, moto S3/SQS, the local model.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS:
        module.register(subparsers)
    return parser


def _use_local_aws(settings: Settings) -> Settings:
    from rag_local.services import local_aws_environment

    for name, value in local_aws_environment(settings).items():
        os.environ.setdefault(name, value)
    get_settings.cache_clear()
    return get_settings()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # Every command but `rag smoke` against AWS (its `--local` sets local_aws) talks to the local moto server.
    settings = _use_local_aws(get_settings()) if getattr(args, "local_aws", True) else get_settings()
    try:
        status: int = args.func(args, settings)
        return status
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # the CLI's last line of defence: a readable message, not a traceback
        import psycopg

        from rag.store.migrations import MigrationChecksumError

        if isinstance(exc, psycopg.OperationalError):
            return fail(f"cannot reach the database ({exc}); is it running? try `rag up`")
        if isinstance(exc, MigrationChecksumError):
            return fail(str(exc))
        raise


if __name__ == "__main__":
    sys.exit(main())
