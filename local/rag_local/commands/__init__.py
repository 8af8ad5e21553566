"""The ``rag`` subcommands, one module per group of commands.

Each module exposes ``register(subparsers) -> None``: it adds its subcommands to the action
``ArgumentParser.add_subparsers()`` returned and sets ``func`` on each, a ``(args, settings) -> int``
that returns the exit status. ``rag_local.cli`` builds the parser from its list of these modules,
in the order ``rag --help`` lists them.
"""

from __future__ import annotations

import argparse
import sys
from typing import TypeAlias

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def fail(message: str) -> int:
    """Print ``error: message`` to stderr; the exit status of a command that failed."""
    print(f"error: {message}", file=sys.stderr)
    return 1
