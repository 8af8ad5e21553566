"""The interface every ``rag_local.commands`` module keeps: ``register(subparsers)`` adding commands with a ``func``."""

from __future__ import annotations

import argparse
import inspect

import pytest

from rag_local.cli import COMMANDS, build_parser


@pytest.mark.parametrize("module", COMMANDS, ids=lambda module: module.__name__.rsplit(".", 1)[1])
def test_each_command_module_registers_commands_that_run_on_args_and_settings(module):
    parser = argparse.ArgumentParser(prog="rag")
    subparsers = parser.add_subparsers(dest="command")
    assert module.register(subparsers) is None
    assert subparsers.choices, f"{module.__name__} registered no command"
    for name, command in subparsers.choices.items():
        func = command.get_default("func")
        assert callable(func), f"rag {name} sets no func"
        assert list(inspect.signature(func).parameters) == ["args", "settings"], f"rag {name}: func(args, settings)"


def test_rag_help_lists_the_commands_in_their_order():
    choices = build_parser()._subparsers._group_actions[0].choices  # noqa: SLF001 - argparse keeps them here
    expected = [
        "up",
        "down",
        "migrate",
        "ingest",
        "rm",
        "status",
        "redrive",
        "backfill",
        "reembed",
        "search",
        "serve",
        "openapi",
        "report",
        "changes",
        "brief",
        "tasks",
        "eval",
        "ask",
        "mcp",
        "smoke",
    ]
    assert list(choices) == expected


def test_an_edited_applied_migration_is_a_readable_error_not_a_traceback(monkeypatch, capsys):
    from rag.store import migrations
    from rag_local.cli import main

    def edited(settings):
        raise migrations.MigrationChecksumError("applied migration file(s) changed since they ran: 0001_x.sql")

    monkeypatch.setattr(migrations, "migrate_database", edited)
    assert main(["migrate"]) == 1
    assert capsys.readouterr().err == "error: applied migration file(s) changed since they ran: 0001_x.sql\n"
