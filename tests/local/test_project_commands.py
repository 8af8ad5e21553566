"""``rag changes``, ``rag brief`` and ``rag tasks`` against the local API server in-process (the real handler on a free port)."""

from __future__ import annotations

import json
import threading

import pytest

from tests.search.test_changes import office_project

pytestmark = pytest.mark.slow


@pytest.fixture
def local_api(db, local_embedder, monkeypatch):
    """Tenant acme's office move behind the local API server; key k-acme is acme's, k-globex globex's."""
    from rag.config import get_settings
    from rag_local.api_server import make_server

    office_project(db, local_embedder, tenant="acme")
    monkeypatch.setenv("RAG_API_KEYS", "k-acme=acme,k-globex=globex")
    get_settings.cache_clear()
    server = make_server(get_settings(), 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("RAG_LOCAL_API_PORT", str(server.server_address[1]))
    get_settings.cache_clear()
    yield
    server.shutdown()
    server.server_close()


def test_rag_changes_prints_each_change_cited(local_api, capsys):
    from rag_local.cli import main

    assert main(["changes", "--project", "office", "--since", "2026-01-26", "--until", "2026-01-26"]) == 0
    out = capsys.readouterr().out
    assert "## What changed in office, meetings of 2026-01-26 to 2026-01-26" in out
    assert "### Decisions made\n- The landlord needs two more weeks" in out
    assert "  - replaces: We decided to move into the Harbor Street office on March 2. [" in out
    assert (
        '### Tasks done\n- "I sent the three removal quotes on Thursday, Atlas is the cheapest." '
        "[2026-01-26-office-move-update; 2026-01-26; turn 1 (Mark Feld)]\n"
        "  - the task: Mark, can you get three quotes from removal companies by January 23? "
        "[2026-01-12-office-move-kickoff; 2026-01-12; turns 6-7 (Ines Duarte, Mark Feld)]"
    ) in out
    assert '### Tasks handed over\n- to Mark Feld: "Mark, could you take over the seating plan from me?" [' in out
    assert '### Risks closed\n- "Also, the landlord finished the network cabling last week' in out


def test_rag_changes_json_and_errors(local_api, capsys):
    from rag_local.cli import main

    assert main(["changes", "--project", "office", "--since", "2026-02-01", "--json"]) == 0
    [payload] = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"decisions_made"' in line]
    assert (payload["project_id"], payload["since"], payload["until"]) == ("office", "2026-02-01", None)
    assert [d["meeting_date"] for d in payload["decisions_made"]] == ["2026-02-09"]

    assert main(["changes", "--project", "office", "--since", "2026-01-01", "--api-key", "k-globex"]) == 1
    assert "HTTP 404" in capsys.readouterr().err
    assert main(["changes", "--project", "office", "--since", "2026-03-01", "--until", "2026-03-31"]) == 0
    assert "nothing recorded in the meetings of this period" in capsys.readouterr().out
    with pytest.raises(SystemExit):  # not a date: argparse's usage error
        main(["changes", "--project", "office", "--since", "last week"])


def test_rag_brief_prints_the_markdown_brief(local_api, capsys):
    from rag_local.cli import main

    assert main(["brief", "--project", "office", "--days", "366"]) == 0
    out = capsys.readouterr().out
    assert "# Project brief: office\n\nAs of " in out
    assert "## Current decisions\n- We move into the Harbor Street office on March 23" in out
    assert "### Ines Duarte\n- " in out and "book Atlas for the move" in out
    assert main(["brief", "--project", "warehouse"]) == 1
    assert "HTTP 404" in capsys.readouterr().err


def test_rag_tasks_by_owner_status_and_due_date(local_api, capsys):
    from rag_local.cli import main

    assert main(["tasks", "--project", "office", "--due-after", "2026-01-17", "--due-before", "2026-02-28"]) == 0
    assert capsys.readouterr().out.splitlines()[-2:] == [
        "- [done] Mark Feld, due 2026-01-23: Mark, can you get three quotes from removal companies by January 23? "
        "[2026-01-12-office-move-kickoff; 2026-01-12; turns 6-7 (Ines Duarte, Mark Feld)]",
        "- [open] Ines Duarte, due 2026-02-20: Ines Duarte: book Atlas for the move, due February 20. "
        "[2026-02-09-office-move-notes; 2026-02-09; chars 310-366]",
    ]
    assert main(["tasks", "--status", "open", "--assignee", "ines duarte"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("- [open] Ines Duarte, due 2026-02-20: ")
    assert main(["tasks", "--assignee", "Nobody"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "no tasks"
    assert main(["tasks", "--due-after", "2026-03-01", "--due-before", "2026-01-01"]) == 1
    assert "HTTP 422" in capsys.readouterr().err


def test_the_tools_over_mcp_as_the_keys_tenant(local_api):
    from rag.config import get_settings
    from tests.ask.test_mcp import mcp_session

    url = f"http://127.0.0.1:{get_settings().local.api_port}"

    async def work(client):
        since = await client.call_tool("changes_since", {"project_id": "office", "since": "2026-02-01"})
        brief = await client.call_tool("project_brief", {"project_id": "office", "days": 366})
        return since, brief

    since, brief = mcp_session(url, "k-acme", work)
    assert since.is_error is False and brief.is_error is False
    [decided] = since.structured_content["decisions_made"]
    [replaced] = decided["supersedes"]
    assert "March 23" in decided["quoted_description"] and "March 16" in replaced["quoted_description"]
    assert decided["cite_as"] != replaced["cite_as"]  # each cited on its own
    assert [d["status"] for d in brief.structured_content["current_decisions"]] == ["current", "current"]

    other, _ = mcp_session(url, "k-globex", work)
    assert other.is_error is True and other.structured_content == {"error": "project office not found"}
