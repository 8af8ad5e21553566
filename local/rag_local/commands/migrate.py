"""``rag migrate``: the SQL migrations of ``sql/`` and the vector indexes they leave to build."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rag_local.commands import Subparsers

if TYPE_CHECKING:
    from rag.config import Settings


def register(subparsers: Subparsers) -> None:
    migrate = subparsers.add_parser("migrate", help="apply the SQL migrations of sql/ (a no-op when up to date)")
    migrate.set_defaults(func=migrate_command)


def migrate_command(args: argparse.Namespace, settings: Settings) -> int:
    from rag.store.migrations import migrate_database

    applied = migrate_database(settings)
    print(f"applied: {', '.join(applied)}" if applied else "database is up to date")
    return 0
