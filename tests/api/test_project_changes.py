"""GET /v1/projects/{id}/changes, /v1/projects/{id}/brief and /v1/tasks by due date, through the real query handler.

The project is tenant acme's office move (tests/search/test_changes.py); tenant globex has none.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from rag_local.api_server import http_api_event
from rag_local.lambdas import LocalContext, load_handler_module
from tests.api.conftest import call
from tests.search.test_changes import office_project

pytestmark = pytest.mark.slow


@pytest.fixture
def office(db, local_embedder):
    office_project(db, local_embedder, tenant="acme")
    return db


def get_raw(path: str, tenant: str = "acme", headers: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Status, content type and body text of a GET through the query handler."""
    event = http_api_event("GET", path, headers or {}, b"", tenant, "test-key")
    response = load_handler_module("query").lambda_handler(event, LocalContext(function_name="query"))
    headers = {k.lower(): v for k, v in (response.get("headers") or {}).items()}
    return int(response["statusCode"]), headers.get("content-type", ""), response["body"]


def test_changes_between_two_dates(office):
    status, body = call("GET", "/v1/projects/office/changes?since=2026-01-26&until=2026-01-26")
    assert status == 200, body
    assert (body["project_id"], body["since"], body["until"]) == ("office", "2026-01-26", "2026-01-26")
    [made] = body["decisions_made"]
    assert "March 16" in made["description"] and made["status"] == "superseded"
    assert (made["meeting_date"], made["start_turn"], made["speakers"]) == ("2026-01-26", 2, ["Ines Duarte"])
    assert made["source"]["uri"] == "s3://rag-documents/projects/office/2026-01-26-office-move-update.vtt"
    [replaced] = made["supersedes"]
    assert "March 2." in replaced["description"] and replaced["meeting_date"] == "2026-01-12"
    [superseded] = body["decisions_superseded"]
    assert superseded["id"] == replaced["id"] and superseded["superseded_by"]["id"] == made["id"]
    [closed] = body["risks_closed"]
    assert closed["change"] == "closed" and "cabling" in closed["target"]["description"]
    [done] = body["tasks_done"]
    assert done["evidence"].startswith("I sent the three removal quotes") and done["target"]["status"] == "done"
    [handed] = body["tasks_handed_over"]
    assert handed["new_value"] == "Mark Feld" and handed["change"] == "reassigned"
    assert body["risks_raised"] == body["tasks_cancelled"] == body["tasks_rescheduled"] == []

    everything = call("GET", "/v1/projects/office/changes?since=2026-01-01&limit=1")[1]
    assert all(len(everything[k]) <= 1 for k in ("decisions_made", "tasks_assigned", "tasks_done"))
    assert everything["until"] is None and "March 2." in everything["decisions_made"][0]["description"]


def test_another_tenants_project_is_not_found(office):
    status, body = call("GET", "/v1/projects/office/changes?since=2026-01-01", tenant="globex")
    assert (status, body["error"]["code"]) == (404, "not_found")
    assert call("GET", "/v1/projects/office/brief", tenant="globex")[0] == 404
    assert call("GET", "/v1/projects/warehouse/changes?since=2026-01-01")[0] == 404
    assert call("GET", "/v1/projects/warehouse/brief?format=markdown")[0] == 404
    assert call("GET", "/v1/tasks?project_id=office&due_after=2026-01-01", tenant="globex") == (200, {"tasks": []})


@pytest.mark.parametrize(
    "path",
    [
        "/v1/projects/office/changes",  # since is required
        "/v1/projects/office/changes?since=January",
        "/v1/projects/office/changes?since=2026-02-01&until=2026-01-01",
        "/v1/projects/office/changes?since=2026-01-01&limit=0",
        "/v1/projects/office/changes?since=2026-01-01&limit=201",
        "/v1/projects/office/brief?days=0",
        "/v1/projects/office/brief?days=367",
        "/v1/projects/office/brief?format=html",
        "/v1/tasks?due_before=soon",
        "/v1/tasks?due_after=2026-02-01&due_before=2026-01-31",
    ],
)
def test_bad_parameters_are_422(office, path):
    status, body = call("GET", path)
    assert (status, body["error"]["code"]) == (422, "validation_error"), body


def test_tasks_due_in_a_window(office):
    status, body = call("GET", "/v1/tasks?project_id=office&due_after=2026-01-17&due_before=2026-02-28")
    assert status == 200
    assert [(t["description"][:20], t["due_date"]) for t in body["tasks"]] == [
        ("Mark, can you get th", "2026-01-23"),
        ("Ines Duarte: book At", "2026-02-20"),
    ]
    open_in_february = call("GET", "/v1/tasks?status=open&due_after=2026-02-01&due_before=2026-02-28")[1]["tasks"]
    assert [t["assignee"] for t in open_in_february] == ["Ines Duarte"]


def test_the_brief_as_json(office):
    status, body = call("GET", "/v1/projects/office/brief?days=366")
    assert status == 200, body
    today = datetime.now(UTC).date()
    assert (body["today"], body["since"]) == (today.isoformat(), date.fromordinal(today.toordinal() - 366).isoformat())
    assert [d["description"][:40] for d in body["decisions"]] == [
        "We move into the Harbor Street office on",
        "We decided the furniture budget is forty",
    ]
    assert body["risks"] == []
    [group] = body["tasks_by_owner"]
    [atlas] = group["tasks"]
    assert (group["owner"], atlas["due_date"], atlas["overdue"], body["overdue_tasks"]) == (
        "Ines Duarte", "2026-02-20", today > date(2026, 2, 20), int(today > date(2026, 2, 20))
    )  # fmt: skip
    assert atlas["source"]["title"] == "2026-02-09-office-move-notes"
    assert set(body["changes"]) == {
        "decisions_made", "decisions_superseded", "risks_raised", "risks_closed", "tasks_assigned", "tasks_done",
        "tasks_cancelled", "tasks_handed_over", "tasks_rescheduled",
    }  # fmt: skip


def test_the_brief_as_markdown(office):
    status, content_type, text = get_raw("/v1/projects/office/brief?format=markdown")
    assert status == 200 and content_type.startswith("text/markdown")
    assert text.startswith(f"# Project brief: office\n\nAs of {datetime.now(UTC).date()}.\n\n## Current decisions\n")
    assert "- We move into the Harbor Street office on March 23" in text
    assert "## Open risks\n- none open" in text and "### Ines Duarte\n" in text


@pytest.mark.parametrize(
    ("path", "headers", "markdown"),
    [
        ("/v1/projects/office/brief", {"Accept": "text/markdown"}, True),
        ("/v1/projects/office/brief", {"accept": "text/markdown, application/json;q=0.5"}, True),
        ("/v1/projects/office/brief", {"Accept": "application/json"}, False),
        ("/v1/projects/office/brief?format=json", {"Accept": "text/markdown"}, False),
        ("/v1/projects/office/brief", {}, False),
    ],
)
def test_the_brief_as_the_accept_header_asks(office, path, headers, markdown):
    status, content_type, text = get_raw(path, headers=headers)
    assert status == 200 and content_type.startswith("text/markdown" if markdown else "application/json")
    assert text.startswith("# Project brief: office") is markdown


def test_the_brief_since_a_date(office):
    status, body = call("GET", "/v1/projects/office/brief?since=2026-01-20")
    assert status == 200 and body["since"] == "2026-01-20"
    made = {d["meeting_date"] for d in body["changes"]["decisions_made"]}
    assert made and min(made) >= "2026-01-20"  # the kickoff's decisions (12 January) are not changes since
    assert call("GET", "/v1/projects/office/brief?since=yesterday")[0] == 422


def test_the_openapi_document_describes_both_routes():
    status, document = call("GET", "/v1/openapi.json")
    assert status == 200
    brief = document["paths"]["/v1/projects/{project_id}/brief"]["get"]
    assert set(brief["responses"]["200"]["content"]) == {"application/json", "text/markdown"}
    changes = document["paths"]["/v1/projects/{project_id}/changes"]["get"]
    assert {p["name"]: p["required"] for p in changes["parameters"]}["since"] is True
