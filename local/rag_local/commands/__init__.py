"""Subcommands of ``rag`` kept in files of their own: each module has ``register(subparsers)``."""
