"""``rag up`` and ``rag down``: the embedded PostgreSQL and the background services process."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from rag_local.commands import Subparsers, fail

if TYPE_CHECKING:
    from rag.config import Settings


def register(subparsers: Subparsers) -> None:
    up = subparsers.add_parser("up", help="start PostgreSQL, S3, SQS and the queue worker in the background")
    up.add_argument("--timeout", type=float, default=120, help="seconds to wait for the services (default 120)")
    up.set_defaults(func=up_command)

    down = subparsers.add_parser("down", help="stop what `rag up` started")
    down.set_defaults(func=down_command)


def up_command(args: argparse.Namespace, settings: Settings) -> int:
    from rag.store.connection import resolve_database_url
    from rag.store.migrations import migrate_database
    from rag_local import postgres, supervisor

    if postgres.is_used(settings):
        started = postgres.start(settings.local.dir / "pgdata", settings.local.pg_port, settings.local.pg_shared_buffers)
        postgres.ensure_database(settings.local.pg_port, "rag")
        print(f"PostgreSQL   {'started' if started else 'already running'} on 127.0.0.1:{settings.local.pg_port}")
    applied = migrate_database(settings)
    print(f"migrations   {', '.join(applied) if applied else 'up to date'}")

    if supervisor.services_pid(settings) is None:
        try:
            services = supervisor.start_services(settings, args.timeout)
        except supervisor.ServicesDidNotStart as exc:
            print(exc.log_tail, file=sys.stderr)
            return fail(str(exc))
        print(f"services     started (pid {services.pid}, log {services.log_path})")
    else:
        print("services     already running")
    print(f"database     {resolve_database_url(settings)}")
    print(f"S3, SQS      {os.environ['AWS_ENDPOINT_URL']}  (moto; credentials 'testing')")
    print(f"query API    http://127.0.0.1:{settings.local.api_port}  (Authorization: Bearer <key>; keys from RAG_API_KEYS)")
    print(f"bucket       {settings.local.bucket}  (drop files under projects/<project_id>/...)")
    print(f"mirror       {settings.local.dir / 's3' / settings.local.bucket}  (the bucket on disk; `rag up` restores it)")
    print(f"queue        {settings.local.queue}  (+ DLQ {settings.local.queue}-dlq)")
    return 0


def down_command(args: argparse.Namespace, settings: Settings) -> int:
    from rag_local import postgres, supervisor

    pid = supervisor.stop_services(settings)
    if pid is not None:
        print(f"services     stopped (pid {pid})")
    if postgres.is_used(settings):
        stopped = postgres.stop(settings.local.dir / "pgdata")
        print(f"PostgreSQL   {'stopped' if stopped else 'was not running'}")
    return 0
