"""The ``changes_since``, ``project_brief`` and ``open_tasks`` (by due date) tools on the office move project.

Called as a model (or an MCP client) calls them: arguments as JSON, results as the model reads
them, every item numbered in the request's citations.
"""

from __future__ import annotations

from datetime import date

import pytest

from rag.ask.tool_context import ToolContext
from rag.ask.tools import TOOLS
from tests.search.test_changes import office_project

pytestmark = pytest.mark.slow


@pytest.fixture
def office(db, local_embedder):
    office_project(db, local_embedder, tenant="acme")
    return db


def context(db, tenant="acme", projects=()):
    from rag.config import get_settings

    return ToolContext(db, get_settings(), tenant, project_ids=tuple(projects))


def test_changes_since_cites_each_change_where_it_was_said(office):
    ctx = context(office)
    result = TOOLS["changes_since"].call(ctx, {"project_id": "office", "since": "2026-01-26", "until": "2026-01-26"})
    data = result.data
    assert (data["project_id"], data["since"], data["until"]) == ("office", date(2026, 1, 26), date(2026, 1, 26))
    [made] = data["decisions_made"]
    assert "March 16" in made["quoted_description"] and made["status"] == "superseded"
    [replaced] = made["supersedes"]
    assert "March 2." in replaced["quoted_description"]
    passage = ctx.citations.get(int(made["cite_as"].strip("[]")))
    assert (passage.type, passage.meeting_date, passage.start_turn, passage.speakers) == (
        "decision", date(2026, 1, 26), 2, ("Ines Duarte",)
    )  # fmt: skip
    assert ctx.citations.get(int(replaced["cite_as"].strip("[]"))).meeting_date == date(2026, 1, 12)
    [done] = data["tasks_done"]
    assert done["quoted_evidence"].startswith("I sent the three removal quotes") and done["change"] == "done"
    said = ctx.citations.get(int(done["cite_as"].strip("[]")))
    assert (said.type, said.start_turn, said.speakers) == ("chunk", 1, ("Mark Feld",))
    assert done["target"]["assignee"] == "Mark Feld"
    [handed] = data["tasks_handed_over"]
    assert handed["new_value"] == "Mark Feld"
    assert set(data) == {"project_id", "since", "until", "decisions_made", "decisions_superseded", "risks_closed",
                         "tasks_assigned", "tasks_done", "tasks_handed_over"}  # fmt: skip
    assert result.count == 6  # one item in each of those lists


def test_changes_since_with_one_project_in_scope_needs_no_project_id(office):
    result = TOOLS["changes_since"].call(context(office, projects=["office"]), {"since": "2026-03-01"})
    assert result.count == 0 and result.data["note"].startswith("no decision, risk or task was recorded")
    unscoped = TOOLS["changes_since"].call(context(office), {"since": "2026-01-01"})
    assert unscoped.data == {"error": "name the project_id (list_projects gives the projects this request may read)"}


@pytest.mark.parametrize(
    ("tenant", "projects", "arguments", "error"),
    [
        ("globex", (), {"project_id": "office", "since": "2026-01-01"}, "project office not found"),
        ("acme", ("remote",), {"project_id": "office", "since": "2026-01-01"}, "outside this request's projects"),
        ("acme", (), {"project_id": "office", "since": "2026-02-01", "until": "2026-01-01"}, "is before since"),
        ("acme", (), {"project_id": "office", "since": "last week"}, "invalid arguments: since"),
    ],
)
def test_changes_since_refuses_what_it_may_not_read(office, tenant, projects, arguments, error):
    ctx = context(office, tenant, projects)
    result = TOOLS["changes_since"].call(ctx, arguments)
    assert result.count == 0 and error in result.data["error"]
    assert len(ctx.citations) == 0


def test_project_brief_lists_current_decisions_and_open_tasks_by_owner(office):
    ctx = context(office)
    result = TOOLS["project_brief"].call(ctx, {"project_id": "office", "days": 366})
    data = result.data
    assert [d["quoted_description"][:40] for d in data["current_decisions"]] == [
        "We move into the Harbor Street office on",
        "We decided the furniture budget is forty",
    ]
    assert all(d["status"] == "current" for d in data["current_decisions"]) and data["open_risks"] == []
    [group] = data["open_tasks_by_owner"]
    assert group["owner"] == "Ines Duarte" and group["tasks"][0]["due_date"] == date(2026, 2, 20)
    assert TOOLS["project_brief"].call(context(office, "globex"), {"project_id": "office"}).data == {
        "error": "project office not found"
    }


def test_open_tasks_due_in_a_month(office):
    ctx = context(office)
    result = TOOLS["open_tasks"].call(ctx, {"project_id": "office", "due_after": "2026-02-01", "due_before": "2026-02-28"})
    assert [(t["assignee"], t["due_date"]) for t in result.data["tasks"]] == [("Ines Duarte", date(2026, 2, 20))]
    assert TOOLS["open_tasks"].call(ctx, {"due_after": "2026-03-01"}).data == {"tasks": []}


def test_open_tasks_by_status(office):
    ctx = context(office)
    done = TOOLS["open_tasks"].call(ctx, {"project_id": "office", "status": "done"}).data["tasks"]
    assert [(t["status"], t["due_date"]) for t in done] == [
        ("done", date(2026, 1, 16)), ("done", date(2026, 1, 16)), ("done", date(2026, 1, 23))
    ]  # fmt: skip
    every = TOOLS["open_tasks"].call(ctx, {"project_id": "office", "status": "any"}).data["tasks"]
    assert [t["status"] for t in every] == ["done", "done", "done", "open"]
    assert TOOLS["open_tasks"].call(ctx, {"status": "finished"}).data["error"].startswith("invalid arguments: status")
