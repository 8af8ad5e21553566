"""The `rag` CLI end to end: up -> ingest (real moto S3 -> SQS -> worker -> handler) -> status -> down."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from rag_local.cli import build_parser

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "parsing"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_every_subcommand_has_help(capsys):
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # noqa: SLF001 - argparse keeps them here
    assert {"up", "down", "migrate", "ingest", "status", "search", "serve", "openapi", "report"} <= set(commands)
    for name in commands:
        with pytest.raises(SystemExit) as exit_info:
            parser.parse_args([name, "--help"])
        assert exit_info.value.code == 0
        assert "usage: rag " + name in capsys.readouterr().out


@pytest.mark.slow
def test_up_ingest_status_down(tmp_path, database_url):
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "RAG_LOCAL_DIR": str(tmp_path / "local"),
        "RAG_LOCAL_MOTO_PORT": str(free_port()),
        "RAG_LOCAL_API_PORT": str(free_port()),
        "RAG_LOCAL_BUCKET": "cli-test",
    }
    env.pop("AWS_ENDPOINT_URL", None)
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(FIXTURES / "design_meeting.txt", docs / "kickoff.txt")
    shutil.copy(FIXTURES / "standup.vtt", docs / "standup.vtt")
    shutil.copy(FIXTURES / "image.txt", docs / "broken.txt")

    def rag(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "rag_local.cli", *args], env=env, capture_output=True, text=True, timeout=300)

    up = rag("up")
    try:
        assert up.returncode == 0, up.stderr
        assert "bucket       cli-test" in up.stdout

        ingest = rag("ingest", str(docs), "--project", "cli-demo", "--quiet", "--timeout", "120")
        assert ingest.returncode == 1  # one file failed
        assert "2 ingested, 1 failed, 0 not processed" in ingest.stdout
        assert "FAILED   projects/cli-demo/broken.txt" in ingest.stderr and "binary file" in ingest.stderr

        again = rag("ingest", str(docs / "kickoff.txt"), "--project", "cli-demo", "--quiet")
        assert again.returncode == 0 and "1 ingested, 0 failed" in again.stdout

        status = rag("status")
        assert status.returncode == 0
        assert "cli-demo                 failed              1" in status.stdout
        assert "cli-demo                 raw_ingested        2" in status.stdout
        assert "s3://cli-test/projects/cli-demo/broken.txt" in status.stdout

        search = rag("search", "who confirmed the delivery date?", "--project", "cli-demo", "--top-k", "1")
        assert search.returncode == 0 and "standup.vtt" in search.stdout
    finally:
        down = rag("down")
    assert down.returncode == 0 and "services     stopped" in down.stdout


def test_ingest_without_services_says_what_to_do(tmp_path):
    env = {**os.environ, "RAG_LOCAL_DIR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-m", "rag_local.cli", "ingest", str(FIXTURES / "memo.txt"), "--project", "p"],
        env=env, capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 1 and "run `rag up` first" in result.stderr
