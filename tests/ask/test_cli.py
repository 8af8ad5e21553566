"""``rag ask`` against the local API server in-process (the real handler on a free port)."""

from __future__ import annotations

import pytest


def test_rag_ask_prints_the_answer_and_its_sources(local_api, capsys):
    from rag_local.cli import main

    assert main(["ask", "What did we decide about the battery?", "--project", "remote"]) == 0

    out = capsys.readouterr().out
    assert "The most relevant passages:\n- " in out  # (the in-process server also prints its metrics)
    assert "[1] s3://api-test/tenants/acme/projects/remote/" in out
    assert "extractive, " in out


def test_rag_ask_unknown_project_exits_1(local_api, capsys):
    from rag_local.cli import main

    assert main(["ask", "battery?", "--project", "nope"]) == 1
    assert "HTTP 404" in capsys.readouterr().err


def test_rag_ask_and_mcp_have_help(capsys):
    from rag_local.cli import build_parser

    for command in ("ask", "mcp"):
        with pytest.raises(SystemExit) as exit_:
            build_parser().parse_args([command, "--help"])
        assert exit_.value.code == 0
        assert "usage: rag " + command in capsys.readouterr().out
