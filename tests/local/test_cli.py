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
    assert {"up", "down", "migrate", "ingest", "rm", "status", "search", "serve", "openapi", "report", "backfill"} <= set(
        commands
    )
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
        return subprocess.run(
            [sys.executable, "-m", "rag_local.cli", *args], env=env, capture_output=True, text=True, timeout=300
        )

    up = rag("up")
    try:
        assert up.returncode == 0, up.stderr
        assert "bucket       cli-test" in up.stdout
        assert_uploads_go_to_the_local_bucket(env)

        ingest = rag("ingest", str(docs), "--project", "cli-demo", "--quiet", "--timeout", "120")
        assert ingest.returncode == 1  # one file failed
        assert "2 ingested, 1 failed, 0 not processed" in ingest.stdout
        assert "FAILED   projects/cli-demo/broken.txt: broken.txt: " in ingest.stderr  # with the parser's error

        again = rag("ingest", str(docs / "kickoff.txt"), "--project", "cli-demo", "--quiet")
        assert again.returncode == 0 and "1 ingested, 0 failed" in again.stdout

        # The worker's backfill follows ingest: segmented, embedded and extracted without `rag backfill`.
        status = wait_for_status(rag, "cli-demo                 extracted           2")
        assert "cli-demo                 failed              1" in status.stdout
        assert "s3://cli-test/projects/cli-demo/broken.txt" in status.stdout
        assert "  segment         0 documents" in status.stdout

        search = rag("search", "who confirmed the delivery date?", "--project", "cli-demo", "--top-k", "1")
        assert search.returncode == 0 and "standup.vtt" in search.stdout
        everything = rag("search", "who confirmed the delivery date?", "--project", "cli-demo", "--types", "all")
        assert everything.returncode == 0 and "standup.vtt" in everything.stdout
        unknown = rag("search", "delivery", "--types", "memo")
        assert unknown.returncode == 1 and "HTTP 422" in unknown.stderr and "types" in unknown.stderr

        # Meeting fields: options set the S3 metadata; a sidecar beside a file is uploaded first and wins.
        dated = rag(
            "ingest", str(docs / "kickoff.txt"), "--project", "cli-demo", "--quiet",
            "--meeting-date", "2026-03-04", "--title", "Kick-off", "--participants", "Dana Kim, Ravi",
        )  # fmt: skip
        assert dated.returncode == 0 and "1 ingested, 0 failed" in dated.stdout, dated.stderr
        assert row(database_url, "projects/cli-demo/kickoff.txt") == ("2026-03-04", "Kick-off", ["Dana Kim", "Ravi"])
        notes = tmp_path / "notes"
        notes.mkdir()
        shutil.copy(FIXTURES / "design_meeting.txt", notes / "review.txt")
        (notes / "review.txt.meta.json").write_text('{"meeting_date": "2026-03-11", "title": "Design review"}')
        sidecar = rag("ingest", str(notes), "--project", "cli-demo", "--quiet", "--meeting-date", "2026-01-01")
        assert sidecar.returncode == 0 and "1 ingested, 0 failed, 0 not processed" in sidecar.stdout, sidecar.stderr
        assert row(database_url, "projects/cli-demo/review.txt")[:2] == ("2026-03-11", "Design review")
        bad_date = rag("ingest", str(docs / "kickoff.txt"), "--project", "cli-demo", "--meeting-date", "March 4")
        assert bad_date.returncode == 1 and "--meeting-date 'March 4' is not an ISO 8601 date" in bad_date.stderr
        two_titles = rag("ingest", str(docs), "--project", "cli-demo", "--title", "One title")
        assert two_titles.returncode == 1 and "--title names one meeting" in two_titles.stderr

        # rag rm deletes through the bucket: the delete event removes the document and its rows.
        removed = rag("rm", "review.txt", "kickoff.txt", "--project", "cli-demo")
        assert removed.returncode == 0 and "2 deleted, 0 not yet removed" in removed.stdout, removed.stderr
        assert row(database_url, "projects/cli-demo/kickoff.txt") is None
        assert row(database_url, "projects/cli-demo/review.txt") is None
        missing = rag("rm", "kickoff.txt", "--project", "cli-demo")
        assert missing.returncode == 1 and "kickoff.txt: no such file or folder in project cli-demo" in missing.stderr
        status = rag("status")
        assert "cli-demo                 extracted           1" in status.stdout
    finally:
        down = rag("down")
    assert down.returncode == 0 and "services     stopped" in down.stdout


def wait_for_status(rag, line: str, seconds: float = 180) -> subprocess.CompletedProcess[str]:
    """`rag status` once it shows ``line`` (the worker's backfill runs in the background)."""
    import time

    deadline = time.monotonic() + seconds
    while line not in (status := rag("status")).stdout:
        assert time.monotonic() < deadline, status.stdout
        time.sleep(1)
    return status


def row(database_url: str, key: str) -> tuple | None:
    """(meeting date, title, participants) of the document of ``key``; None when it has none."""
    import psycopg

    with psycopg.connect(database_url) as conn:
        found = conn.execute(
            "SELECT meeting_date::text, title, participants FROM documents WHERE object_key = %s", (key,)
        ).fetchone()
    return tuple(found) if found else None


def test_ingest_without_services_says_what_to_do(tmp_path):
    env = {**os.environ, "RAG_LOCAL_DIR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-m", "rag_local.cli", "ingest", str(FIXTURES / "memo.txt"), "--project", "p"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1 and "run `rag up` first" in result.stderr


BACKFILL_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "backfill"


@pytest.mark.slow
def test_backfill_runs_the_stage_handlers_and_status_reports_the_stages(db, local_embedder, capsys):
    from rag_local.cli import main
    from tests.backfill.conftest import ingest_file

    scanner = ingest_file(db, BACKFILL_FIXTURES / "transcripts" / "scanner_rollout_sync.txt", local_embedder)
    ingest_file(db, BACKFILL_FIXTURES / "documents" / "release_process.md", local_embedder)

    assert main(["backfill", "--stage", "segment", "--limit", "1"]) == 0
    captured = capsys.readouterr()
    assert "segment  1 processed, 0 failed, 1 remaining" in captured.out
    assert "embed" not in captured.out
    assert "segment : 100%" in captured.err and "1/1" in captured.err  # the progress bar

    assert main(["status"]) == 0
    out = capsys.readouterr().out
    assert "orion                    raw_ingested        1" in out and "orion                    segmented           1" in out
    assert "  segment         1 documents" in out and "  embed           1 documents" in out

    assert main(["backfill", "--run-until-complete", "--batch-size", "1", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "segment  1 processed, 0 failed, 0 remaining" in out
    assert "embed    2 processed, 0 failed, 0 remaining" in out
    assert "extract  2 processed, 0 failed, 0 remaining" in out
    assert {row[0] for row in db.execute("SELECT status FROM documents")} == {"extracted"}

    # A document whose extraction failed three times shows with its error, and can be retried.
    db.execute(
        "UPDATE documents SET status = 'embedded', backfill_error = 'extract: LLMOutputError: refused', backfill_attempts = 3 WHERE id = %s",
        (scanner,),
    )
    assert main(["status"]) == 0
    out = capsys.readouterr().out
    assert "  extract         0 documents" in out
    assert "s3://rag-documents/projects/orion/scanner_rollout_sync.txt [embedded, 3 attempts, exhausted]" in out
    assert "extract: LLMOutputError: refused" in out
    tasks = db.execute("SELECT count(*) FROM tasks").fetchone()[0]
    assert f"{tasks} tasks, {tasks} open tasks" in out

    assert main(["backfill", "--stage", "extract", "--retry-failed", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "1 documents with exhausted attempts are claimable again" in out
    assert "extract  1 processed, 0 failed, 0 remaining" in out
    assert db.execute("SELECT status, backfill_error FROM documents WHERE id = %s", (scanner,)).fetchone() == ("extracted", None)


@pytest.mark.slow
def test_backfill_through_the_synthesized_state_machine(db, local_embedder, capsys):
    from rag_local.cli import main
    from tests.backfill.conftest import ingest_file

    ingest_file(db, BACKFILL_FIXTURES / "documents" / "release_process.md", local_embedder)

    assert main(["backfill", "--state-machine", "--batch-size", "5"]) == 0

    out = capsys.readouterr().out
    assert "execution SUCCEEDED" in out
    assert "segment  1 processed, 0 failed, 0 remaining after 1 iterations" in out
    assert "extract  1 processed, 0 failed, 0 remaining after 1 iterations" in out
    assert db.execute("SELECT status FROM documents").fetchone()[0] == "extracted"


def assert_uploads_go_to_the_local_bucket(env: dict[str, str]) -> None:
    """`rag up`'s API presigns the page's uploads for the local bucket on the local moto server."""
    import json
    import urllib.request

    api = f"http://127.0.0.1:{env['RAG_LOCAL_API_PORT']}"
    with urllib.request.urlopen(f"{api}/config.json", timeout=30) as response:
        assert json.loads(response.read())["upload"] is True
    request = urllib.request.Request(
        f"{api}/v1/uploads",
        data=json.dumps({"project_id": "cli-demo", "filename": "notes.txt"}).encode(),
        headers={"Authorization": "Bearer dev-local-key", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        ticket = json.loads(response.read())
    moto = f"http://127.0.0.1:{env['RAG_LOCAL_MOTO_PORT']}"
    assert ticket["url"].startswith(f"{moto}/cli-test/tenants/default/projects/cli-demo/notes.txt?")
