"""Time in answers: every passage and quote carries its meeting date, an item its status and speaker, current first.

The project is tenant acme's office move (tests/search/test_changes.py): the move date was decided
on 2026-01-12 (March 2), replaced on 2026-01-26 (March 16) and again on 2026-02-09 (March 23).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest

from tests.api.conftest import call
from tests.embedding.fake_openai import Assistant, FakeOpenAI
from tests.search.test_changes import office_project

pytestmark = pytest.mark.slow

MOVE = {"question": "When do we move into the Harbor Street office?", "project_ids": ["office"]}
DATED_QUOTE = re.compile(r'^- .+, \d{4}-\d{2}-\d{2}: ".+" \[\d+\]$')


@pytest.fixture
def office(db, local_embedder):
    office_project(db, local_embedder, tenant="acme")
    return db


def line_about(answer: str, words: str) -> tuple[int, str]:
    [(i, line)] = [(i, line) for i, line in enumerate(answer.splitlines()) if words in line]
    return i, line


def test_the_extractive_answer_leads_with_the_current_decision_and_says_what_it_replaced_and_when(office):
    status, body = call("POST", "/v1/ask", MOVE)

    assert status == 200, body
    answer = body["answer"]
    assert answer.startswith("The current decision (2026-02-09):\n"), answer
    current_at, current = line_about(answer, "March 23")
    assert current_at == 1 and re.match(r'- (Decision \(|.+ \(decision, )current\), 2026-02-09: "', current)
    replaced_at, replaced = line_about(answer, "March 16")
    first_at, first = line_about(answer, "March 2.")
    assert answer.splitlines()[2] == "It replaced:"
    assert current_at < replaced_at < first_at  # latest first
    assert replaced.startswith('- Ines Duarte (decision, superseded on 2026-02-09), 2026-01-26: "')
    assert first.startswith('- Ines Duarte (decision, superseded on 2026-01-26), 2026-01-12: "')
    quotes = [line for line in answer.splitlines() if line.startswith("- ")]
    assert quotes and all(DATED_QUOTE.match(line) for line in quotes), answer  # every quote dated
    assert not any("March 2." in line or "March 16" in line for line in quotes if "current" in line)
    others = answer.split("Other relevant passages:")[1:]
    assert not any(day in "".join(others) for day in ("March 2.", "March 16", "March 23"))  # each said once, dated
    cited = {c["n"]: c for c in body["citations"]}
    n = int(re.search(r"\[(\d+)\]$", current).group(1))
    assert (cited[n]["type"], cited[n]["meeting_date"]) == ("decision", "2026-02-09")


def test_an_extracted_item_is_quoted_with_its_speaker_and_status_not_its_kind(office):
    status, body = call("POST", "/v1/ask", {"question": "Who books Atlas for the move?", "project_ids": ["office"]})

    assert status == 200, body
    quotes = [line for line in body["answer"].splitlines() if line.startswith("- ")]
    assert quotes and all(DATED_QUOTE.match(line) for line in quotes), body["answer"]
    assert not any(line.startswith(("- Task:", "- Decision:", "- Risk:", "- Task,")) for line in quotes)
    [task] = [line for line in quotes if "book Atlas" in line and "(task" in line]
    [sentence] = [line for line in quotes if "book Atlas" in line and "(task" not in line]
    assert task.startswith('- Ines Duarte (task, open, due 2026-02-20), 2026-02-09: "')  # notes: the assignee
    assert sentence.startswith('- Ines Duarte, 2026-02-09: "book Atlas')  # a notes bullet's name, not "- Ines Duarte"


def test_a_task_said_by_someone_else_names_who_owes_it(office):
    status, body = call("POST", "/v1/ask", {"question": "Who is doing the seating plan?", "project_ids": ["office"]})

    assert status == 200, body
    tasks = [line for line in body["answer"].splitlines() if line.startswith("- ") and "(task" in line]
    assert any(line.startswith("- Ines Duarte (task, done, due 2026-01-16, owner Mark Feld), ") for line in tasks), body["answer"]


def test_the_search_tool_ranks_current_before_superseded_and_marks_each(office, local_embedder):
    from rag.ask.tool_context import ToolContext
    from rag.ask.tools import TOOLS
    from rag.config import Settings

    ctx = ToolContext(office, Settings(embedding_provider="local"), "acme", ("office",), _embedder=local_embedder)
    result = TOOLS["search"].call(ctx, {"query": "move into the Harbor Street office", "types": ["decision"], "top_k": 6})

    moves = [r for r in result.data["results"] if "Harbor Street" in r["quoted_text"]]
    assert [r["meeting_date"] for r in moves] == ["2026-02-09", "2026-01-26", "2026-01-12"]  # current first
    latest, middle, first = moves
    assert latest["status"] == "current"
    assert middle["status"] == f"superseded by {latest['cite_as']}"
    assert first["status"] == f"superseded by {middle['cite_as']}"
    assert all("superseded_by" not in r.get("fields", {}) for r in moves)  # a row id means nothing to a model

    alone = TOOLS["search"].call(
        ToolContext(office, ctx.settings, "acme", ("office",), _embedder=local_embedder),
        {"query": "We decided to move into the Harbor Street office on March 2", "types": ["decision"], "top_k": 1},
    )
    [only] = alone.data["results"]
    assert "March 2." in only["quoted_text"]
    assert only["status"] == "superseded on 2026-01-26"  # its replacement is not among the passages: the day it was


@pytest.fixture
def model(monkeypatch):
    from rag.config import get_settings

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    with FakeOpenAI() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("RAG_LLM_PROVIDER", "openai")
        monkeypatch.setenv("RAG_LLM_MAX_RETRIES", "0")
        get_settings.cache_clear()
        yield server
    get_settings.cache_clear()


def test_the_model_is_told_the_date_and_that_a_later_meeting_overrides_and_reads_dated_items(office, model):
    model.chat_responses += [
        Assistant(
            tool_calls=[
                {"id": "c1", "name": "search", "arguments": {"query": "Harbor Street move date", "types": ["decision"]}},
                {"id": "c2", "name": "build_context", "arguments": {"query": "Harbor Street move date", "types": ["all"]}},
            ]
        ),  # fmt: skip
        Assistant("We move into Harbor Street on March 23 [1]."),
    ]

    status, body = call("POST", "/v1/ask", MOVE)

    assert status == 200, body
    first, second = [r["body"] for r in model.requests if r["path"] == "/v1/chat/completions"]
    system = first["messages"][0]
    assert system["role"] == "system"
    today = datetime.now(UTC).date().isoformat()
    assert f"Today is {today}." in system["content"]
    assert "later meeting overrides an earlier one" in system["content"]
    assert "superseded" in system["content"] and "history" in system["content"]
    searched, context = [json.loads(m["content"]) for m in second["messages"] if m["role"] == "tool"]
    statuses = {r["meeting_date"]: r["status"] for r in searched["results"] if "Harbor Street" in r["quoted_text"]}
    assert statuses["2026-02-09"] == "current" and statuses["2026-01-12"].startswith("superseded")
    headers = re.findall(r"^\[\d+\] .*$", context["quoted_context"], flags=re.MULTILINE)
    assert len(headers) == context["passages"] and all(", meeting of 20" in h for h in headers)  # each passage dated
    assert "Decision: status superseded on 2026-01-26" in context["quoted_context"]
    assert "superseded by " not in context["quoted_context"]  # never a row id


def test_the_mcp_servers_instructions_carry_today_and_the_rule_of_time(local_api):
    from tests.ask.test_mcp import mcp_session

    async def work(client):
        return client.instructions

    instructions = mcp_session(local_api, "k-acme", work)

    assert f"Today is {datetime.now(UTC).date().isoformat()}." in instructions
    assert "later meeting overrides an earlier one" in instructions and "superseded" in instructions


def test_a_quoted_risk_or_task_is_followed_by_what_a_later_meeting_said_of_it_cited_there(office):
    status, body = call("POST", "/v1/ask", {"question": "Is the network cabling risk still open?", "project_ids": ["office"]})

    assert status == 200, body
    lines = body["answer"].splitlines()
    risk_at = next(i for i, line in enumerate(lines) if line.startswith("- ") and "(risk, closed), 2026-01-12" in line)
    closed = lines[risk_at + 1]
    assert closed.startswith('  - Closed 2026-01-26 (Mark Feld): "Also, the landlord finished the network cabling'), body[
        "answer"
    ]
    cited = {c["n"]: c for c in body["citations"]}
    n = int(re.search(r"\[(\d+)\]$", closed).group(1))
    assert (cited[n]["meeting_date"], cited[n]["start_turn"]) == ("2026-01-26", 3)
    assert sum("Closed 2026-01-26" in line for line in lines) == 1  # once, however often the risk is quoted


def test_a_task_done_after_a_handover_shows_both_statements_in_meeting_order(office):
    status, body = call("POST", "/v1/ask", {"question": "Who is doing the seating plan?", "project_ids": ["office"]})

    assert status == 200, body
    statements = [line.split(":")[0] for line in body["answer"].splitlines() if line.startswith("  - ")]
    assert statements[:2] == ["  - Handed over to Mark Feld 2026-01-26 (Ines Duarte)", "  - Reported done 2026-02-09"], body[
        "answer"
    ]
