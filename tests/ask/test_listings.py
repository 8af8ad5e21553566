"""Listing answers without a model: tasks due in a period and what changed since a date, on the office move project."""

from __future__ import annotations

from datetime import date

import pytest

from rag.ask.listings import listing_answer
from tests.ask.test_changes_tools import context
from tests.search.test_changes import office_project

pytestmark = pytest.mark.slow

TODAY = date(2026, 11, 25)


@pytest.fixture
def office(db, local_embedder):
    office_project(db, local_embedder, tenant="acme")
    return db


def answer(db, question, projects=("office",), tenant="acme"):
    ctx = context(db, tenant, projects)
    found = listing_answer(ctx, question, TODAY)
    return (found, ctx) if found is None else (found[0], ctx)


def test_tasks_due_in_a_month_are_listed_with_owner_status_and_citation(office):
    text, ctx = answer(office, "Which tasks are due in February?")
    assert text == (
        "Tasks due in February, as the later meetings left them:\n"
        '- Ines Duarte, due 2026-02-20 (open): "Ines Duarte: book Atlas for the move, due February 20." [1]'
    )
    assert ctx.citations.get(1).meeting_date == date(2026, 2, 9) and ctx.citations.get(1).type == "task"
    january, _ = answer(office, "what is due in January 2026?")
    assert january.splitlines()[1:] == [
        '- Mark Feld, due 2026-01-16 (done): "Mark, could you take over the seating plan from me?" [1]',
        '- Mark Feld, due 2026-01-16 (done): "I\'ll draft the seating plan for the new floor by Friday." [2]',
        '- Mark Feld, due 2026-01-23 (done): "Mark, can you get three quotes from removal companies by January 23?" [3]',
    ]
    before, _ = answer(office, "Which deadlines fall before January 20?")  # the year: the project's latest meeting's
    assert before.splitlines()[0] == "Tasks due before 2026-01-20, as the later meetings left them:"
    assert [line[:28] for line in before.splitlines()[1:]] == ["- Mark Feld, due 2026-01-16 ", "- Mark Feld, due 2026-01-16 "]
    by, _ = answer(office, "Which tasks are due by January 23?")  # "by": that day included
    assert [line[:28] for line in by.splitlines()[1:]][-1] == "- Mark Feld, due 2026-01-23 "
    assert answer(office, "Which tasks are due after 2026-01-23?")[0].splitlines()[1].startswith("- Ines Duarte, due 2026-02-20")


def test_what_changed_since_the_first_meeting(office):
    text, ctx = answer(office, "What changed since the first meeting?")
    lines = text.splitlines()
    assert lines[:2] == ["What changed, as the meetings recorded it:", "Meetings from 2026-01-13 on:"]
    assert lines[2].startswith('- Decided 2026-01-26 (Ines Duarte): "The landlord needs two more weeks')
    assert (
        '; this replaced the decision of 2026-01-12: "We decided to move into the Harbor Street office on March 2."' in lines[2]
    )
    assert lines[2].endswith("(itself superseded later)")
    assert lines[3].startswith('- Decided 2026-02-09: "We move into the Harbor Street office on March 23')
    assert any(
        line.startswith('- Risk closed 2026-01-26 (Mark Feld): "Also, the landlord finished the network cabling')
        for line in lines
    )
    assert any(line.startswith('- Task done 2026-01-26 (Mark Feld): "I sent the three removal quotes') for line in lines)
    assert any(line.startswith('- Task done 2026-02-09: "The seating plan is finished') for line in lines)  # no bullet
    assert any(line.startswith("- Task handed over to Mark Feld 2026-01-26 (Ines Duarte)") for line in lines)
    assert not any("furniture budget" in line for line in lines)  # decided in the first meeting itself
    cited = {ctx.citations.get(n).meeting_date for n in range(1, len(ctx.citations) + 1)}
    assert cited == {date(2026, 1, 12), date(2026, 1, 26), date(2026, 2, 9)}  # the replaced items cite their own meeting


def test_what_changed_since_a_date(office):
    text, _ = answer(office, "What's new since February 1?")
    assert text.splitlines()[1] == "Meetings from 2026-02-01 on:"
    assert not any("2026-01-26 (" in line for line in text.splitlines()[2:] if line.startswith("- Decided"))
    assert answer(office, "anything new since March 2026?")[0] is None  # nothing recorded: left to the search


@pytest.mark.parametrize(
    "question",
    ["What did we decide about the move date?", "Who books the movers?", "Which risks are still open?", "What changed?",
     "Which tasks are due in Smarch?", "What changed since forever?",
     "When is the seating plan due in January?", "Has the move date changed since the first meeting?"],
)  # fmt: skip
def test_other_questions_are_left_to_the_search(office, question):
    assert answer(office, question)[0] is None


def test_another_tenant_gets_no_listing(office):
    assert answer(office, "Which tasks are due in February?", projects=(), tenant="globex")[0] is None
    assert answer(office, "What changed since the first meeting?", projects=(), tenant="globex")[0] is None


def test_ask_without_a_model_answers_with_the_listing(office):
    from tests.api.conftest import call

    status, body = call("POST", "/v1/ask", {"question": "Which tasks are due in February?", "project_ids": ["office"]})
    assert status == 200 and body["mode"] == "extractive"
    assert body["answer"].startswith("Tasks due in February, as the later meetings left them:\n- Ines Duarte, due 2026-02-20")
    [citation] = body["citations"]
    assert (citation["n"], citation["type"], citation["meeting_date"]) == (1, "task", "2026-02-09")
    status, body = call("POST", "/v1/ask", {"question": "What changed since the first meeting?", "project_ids": ["office"]})
    assert status == 200 and "this replaced the decision of 2026-01-12" in body["answer"]
    assert {c["meeting_date"] for c in body["citations"]} == {"2026-01-12", "2026-01-26", "2026-02-09"}


def test_what_changed_at_a_meeting_named_by_its_date_or_its_title(office):
    text, ctx = answer(office, "What changed at the meeting on 26 January?")
    lines = text.splitlines()
    assert lines[0] == "What changed at the meeting of 2026-01-26 (2026-01-26-office-move-update):"
    assert lines[1].startswith('- Decided 2026-01-26 (Ines Duarte): "The landlord needs two more weeks')
    assert (
        '; this replaced the decision of 2026-01-12: "We decided to move into the Harbor Street office on March 2."' in lines[1]
    )
    assert any(line.startswith('- Risk closed 2026-01-26 (Mark Feld): "Also, the landlord finished') for line in lines)
    assert not any("March 23" in line or "2026-02-09 (" in line for line in lines)  # only that meeting's changes
    assert {ctx.citations.get(n).meeting_date for n in range(1, len(ctx.citations) + 1)} == {date(2026, 1, 12), date(2026, 1, 26)}

    by_title, _ = answer(office, "What changed at the office move notes?")
    assert by_title.splitlines()[0] == "What changed at the meeting of 2026-02-09 (2026-02-09-office-move-notes):"
    by_month, _ = answer(office, "What changed in the February meeting?")
    assert by_month.splitlines()[0] == by_title.splitlines()[0]
    about, _ = answer(office, "What changed about the seating plan at the update call?")
    assert "seating plan" in about.splitlines()[1].lower()  # the subject asked about first


@pytest.mark.parametrize(
    "question",
    ["What changed in the budget?", "What changed at the meeting on 3 March?", "What changed at the board review?"],
)
def test_a_meeting_that_is_not_there_is_left_to_the_search(office, question):
    assert answer(office, question)[0] is None


def test_what_is_still_open_is_listed_from_the_later_meetings(office):
    text, ctx = answer(office, "Which tasks are still open?")
    assert text == (
        "Open tasks, as the later meetings left them:\n"
        '- Ines Duarte, due 2026-02-20 (overdue): "Ines Duarte: book Atlas for the move, due February 20." [1]'
    )  # the removal quotes and the seating plan were reported done
    assert ctx.citations.get(1).type == "task" and ctx.citations.get(1).meeting_date == date(2026, 2, 9)
    assert answer(office, "What are the open action items?")[0] == text
