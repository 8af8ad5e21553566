"""What changed between two dates, tasks by due date, and the project brief, on the real database.

The project is the office move of tests/fixtures/backfill/timeline, backfilled offline: the
move date decided on January 12 (March 2), changed on January 26 (March 16) and again on
February 9 (March 23); the removal quotes reported done and the seating plan handed over on
January 26, the seating plan done and Atlas booked (due February 20) on February 9; the cabling
risk raised on January 12 and closed on January 26.
"""

from __future__ import annotations

from datetime import date

import pytest

from tests.backfill.conftest import ingest_file
from tests.backfill.test_timeline_stages import MEETINGS, backfill

pytestmark = pytest.mark.slow

JAN_12, JAN_26, FEB_9 = date(2026, 1, 12), date(2026, 1, 26), date(2026, 2, 9)


def office_project(db, embedder, *, tenant: str = "default", project: str = "office") -> None:
    """The three meetings of the office move, ingested for ``tenant`` and backfilled (segments, items, links)."""
    from rag.config import Settings

    for path in MEETINGS:
        ingest_file(db, path, embedder, project=project, tenant=tenant, meeting_date=date.fromisoformat(path.name[:10]))
    backfill(db, Settings(embedding_provider="local", llm_provider="none"), embedder)


@pytest.fixture
def office(db, local_embedder):
    office_project(db, local_embedder)
    return db


def changes(db, since, until=None, **kwargs):
    from rag.search.changes import changes_between

    return changes_between(
        db, kwargs.pop("tenant", "default"), kwargs.pop("project", "office"), since=since, until=until, **kwargs
    )


def mentions(items, *words):
    """The items whose description has every one of ``words`` (lower case)."""
    return [item for item in items if all(w in item["description"].lower() for w in words)]


def test_the_whole_history_lists_every_kind_of_change_with_its_citation(office):
    found = changes(office, JAN_12)

    made = found["decisions_made"]
    assert [d["meeting_date"] for d in made] == sorted(d["meeting_date"] for d in made)
    [march_2], [march_16], [march_23] = mentions(made, "march 2."), mentions(made, "march 16"), mentions(made, "march 23")
    assert [ref["id"] for ref in march_16["supersedes"]] == [march_2["id"]]
    assert [ref["id"] for ref in march_23["supersedes"]] == [march_16["id"]]
    assert march_16["supersedes"][0]["meeting_date"] == "2026-01-12" and march_16["supersedes"][0]["start_turn"] == 2
    assert (march_23["status"], march_2["status"], march_2["supersedes"]) == ("current", "superseded", [])
    assert (march_2["meeting_date"], march_2["start_turn"], march_2["speakers"]) == (JAN_12, 2, ["Ines Duarte"])
    assert march_2["source_uri"].endswith("2026-01-12-office-move-kickoff.txt")

    superseded = found["decisions_superseded"]
    assert [(d["id"], d["superseded_by"]["id"]) for d in superseded] == [
        (march_2["id"], march_16["id"]),
        (march_16["id"], march_23["id"]),
    ]
    assert superseded[0]["superseded_by"]["meeting_date"] == "2026-01-26"

    [cabling] = found["risks_raised"]
    assert "network cabling" in cabling["description"] and cabling["status"] == "closed"
    [closed] = found["risks_closed"]
    assert closed["change"] == "closed" and closed["target"]["id"] == cabling["id"]
    assert "call the cabling risk closed" in closed["evidence"]
    assert (closed["meeting_date"], closed["start_turn"], closed["speakers"]) == (JAN_26, 3, ["Mark Feld"])
    assert closed["description"] == cabling["description"]  # what it changed, in the words of the risk

    assigned = found["tasks_assigned"]
    [quotes] = mentions(assigned, "quotes")
    assert (quotes["assignee"], quotes["due_date"], quotes["status"]) == ("Mark Feld", date(2026, 1, 23), "done")
    [atlas] = mentions(assigned, "book atlas")
    assert (atlas["assignee"], atlas["due_date"], atlas["status"], atlas["meeting_date"]) == (
        "Ines Duarte", date(2026, 2, 20), "open", FEB_9
    )  # fmt: skip

    done = found["tasks_done"]
    assert [d["target"]["id"] for d in done] == [quotes["id"], mentions(assigned, "draft the seating plan")[0]["id"]]
    assert done[0]["evidence"].startswith("I sent the three removal quotes") and done[0]["meeting_date"] == JAN_26
    [handed] = found["tasks_handed_over"]
    assert (handed["new_value"], handed["target"]["assignee"], handed["meeting_date"]) == ("Mark Feld", "Mark Feld", JAN_26)
    assert "take over the seating plan" in handed["evidence"]
    assert found["tasks_cancelled"] == found["tasks_rescheduled"] == []


def test_a_range_keeps_only_what_its_meetings_said(office):
    middle = changes(office, JAN_26, JAN_26)
    assert [d["meeting_date"] for d in middle["decisions_made"]] == [JAN_26]
    assert "march 16" in middle["decisions_made"][0]["description"].lower()
    # superseded in that meeting: the January 12 decision, cited where it was made
    [superseded] = middle["decisions_superseded"]
    assert "march 2." in superseded["description"].lower() and superseded["meeting_date"] == JAN_12
    assert middle["risks_raised"] == [] and len(middle["risks_closed"]) == 1
    assert [d["evidence"][:30] for d in middle["tasks_done"]] == ["I sent the three removal quote"]
    others = [i for category, items in middle.items() if category != "decisions_superseded" for i in items]
    assert {i["meeting_date"] for i in others} == {JAN_26}

    since_february = changes(office, date(2026, 2, 1))
    assert [d["meeting_date"] for d in since_february["decisions_made"]] == [FEB_9]
    assert ["march 16" in d["description"].lower() for d in since_february["decisions_superseded"]] == [True]
    assert ["seating plan is finished" in d["evidence"] for d in since_february["tasks_done"]] == [True]
    assert since_february["risks_closed"] == since_february["tasks_handed_over"] == []

    assert not any(changes(office, date(2026, 3, 1)).values())
    assert not any(changes(office, JAN_12, date(2026, 1, 11)).values())


def test_another_tenant_or_project_sees_nothing(office):
    assert not any(changes(office, JAN_12, tenant="globex").values())
    assert not any(changes(office, JAN_12, project="warehouse").values())


def test_each_list_is_capped_at_the_limit_in_meeting_order(office):
    found = changes(office, JAN_12, limit=1)
    assert all(len(items) <= 1 for items in found.values())
    assert "march 2." in found["decisions_made"][0]["description"].lower()
    assert len(found["tasks_done"]) == 1 and found["tasks_handed_over"]  # the statements' cap is per kind


def test_tasks_by_due_date(office):
    from rag.search.tasks import list_tasks

    def due(**window):
        rows = list_tasks(office, "default", project_id="office", status=None, limit=50, **window)
        return [(r["description"][:20], r["due_date"]) for r in rows]

    seating = [("Mark, could you take", date(2026, 1, 16)), ("I'll draft the seati", date(2026, 1, 16))]
    january = due(due_after=date(2026, 1, 1), due_before=date(2026, 1, 31))
    assert january == [*seating, ("Mark, can you get th", date(2026, 1, 23))]
    assert due(due_after=date(2026, 2, 1)) == [("Ines Duarte: book At", date(2026, 2, 20))]
    assert due(due_before=date(2026, 1, 16)) == seating  # inclusive
    assert due(due_after=date(2026, 1, 23), due_before=date(2026, 1, 23)) == [("Mark, can you get th", date(2026, 1, 23))]
    assert due(due_after=date(2026, 3, 1)) == []


def test_the_brief_has_what_is_current_and_open_and_what_changed_lately(office):
    from rag.search.brief import project_brief

    brief = project_brief(office, "default", "office", today=date(2026, 2, 12), days=14)
    decisions = [d["description"].lower() for d in brief["decisions"]]
    assert len(decisions) == 2 and "march 23" in decisions[0] and "furniture budget" in decisions[1]
    assert brief["risks"] == []  # the cabling risk was closed
    assert [(g["owner"], [t["description"][:20] for t in g["tasks"]]) for g in brief["tasks_by_owner"]] == [
        ("Ines Duarte", ["Ines Duarte: book At"])
    ]
    [atlas] = brief["tasks_by_owner"][0]["tasks"]
    assert (atlas["overdue"], brief["overdue_tasks"], atlas["meeting_date"]) == (False, 0, FEB_9)
    assert brief["since"] == date(2026, 1, 29)
    changed = brief["changes"]
    assert [d["meeting_date"] for d in changed["decisions_made"]] == [FEB_9] and len(changed["tasks_done"]) == 1
    assert changed["risks_closed"] == []  # closed on January 26, before the window

    later = project_brief(office, "default", "office", today=date(2026, 3, 1), days=7)
    assert later["tasks_by_owner"][0]["tasks"][0]["overdue"] is True and later["overdue_tasks"] == 1
    assert not any(later["changes"].values())

    assert project_brief(office, "globex", "office", today=date(2026, 2, 12)) == {
        "project_id": "office", "today": date(2026, 2, 12), "since": date(2026, 1, 29), "decisions": [], "risks": [],
        "tasks_by_owner": [], "overdue_tasks": 0, "changes": changes(office, JAN_12, tenant="globex"),
    }  # fmt: skip


def test_overdue_tasks_come_first_and_tasks_without_an_owner_last(office):
    from rag.search.brief import project_brief

    office.execute(
        """UPDATE tasks SET status = 'open', assignee = CASE WHEN description LIKE 'Mark, could%%' THEN NULL
                                                            ELSE assignee END
            WHERE project_id = 'office'"""
    )
    brief = project_brief(office, "default", "office", today=date(2026, 1, 20), days=14)
    groups = [(g["owner"], [(t["due_date"], t["overdue"]) for t in g["tasks"]]) for g in brief["tasks_by_owner"]]
    assert groups == [
        ("Mark Feld", [(date(2026, 1, 16), True), (date(2026, 1, 23), False)]),
        ("Ines Duarte", [(date(2026, 2, 20), False)]),
        (None, [(date(2026, 1, 16), True)]),
    ]
    assert brief["overdue_tasks"] == 2


def test_the_markdown_brief_cites_every_line(office):
    from rag.search.brief import brief_markdown, project_brief

    text = brief_markdown(project_brief(office, "default", "office", today=date(2026, 3, 1), days=30))
    assert text.startswith("# Project brief: office\n\nAs of 2026-03-01.\n\n## Current decisions\n- ")
    assert "- We move into the Harbor Street office on March 23" in text
    assert "[2026-02-09-office-move-notes; 2026-02-09; chars 180-291]" in text
    assert "March 2." not in text.split("## What changed")[0]  # superseded: not among the current decisions
    assert "## Open risks\n- none open" in text
    assert "## Open tasks (1 overdue)\n\n### Ines Duarte\n- OVERDUE since 2026-02-20: Ines Duarte: book Atlas" in text
    assert "## What changed since 2026-01-30\n\n### Decisions made\n" in text
    assert (
        "- We move into the Harbor Street office on March 23, one week later than planned, because of the kitchen works. "
        "[2026-02-09-office-move-notes; 2026-02-09; chars 180-291]\n"
        "  - replaces: The landlord needs two more weeks for the floor, so we decided to move into the Harbor Street "
        "office on March 16 instead. [2026-01-26-office-move-update; 2026-01-26; turn 2 (Ines Duarte)]\n"
    ) in text
    assert "### Decisions superseded" not in text  # the same pairs, shown under the decisions that replaced them
    assert (
        '### Tasks done\n- "The seating plan is finished and shared with the teams." '
        "[2026-02-09-office-move-notes; 2026-02-09; chars 52-109]\n"
        "  - the task: I'll draft the seating plan for the new floor by Friday. "
        "[2026-01-12-office-move-kickoff; 2026-01-12; turn 8 (Ines Duarte)]"
    ) in text
    assert "- Ines Duarte: book Atlas for the move, due February 20. (owner Ines Duarte, due 2026-02-20; now open)" in text
    bullets = [line for line in text.splitlines() if line.lstrip().startswith("- ") and "none" not in line]
    assert len(bullets) == 8 and all(line.endswith("]") for line in bullets)
