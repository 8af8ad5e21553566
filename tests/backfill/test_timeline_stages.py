"""Knowledge over time, end to end on the real database: three meetings of an office move, backfilled offline.

A later meeting supersedes a decision (and a third supersedes that one), reports a task done,
hands another over and closes a risk; deleting or re-ingesting a meeting recomputes all of it.
"""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

import pytest

from rag.backfill.stages import run_named_stage
from tests.backfill.conftest import FIXTURES, ingest_file

pytestmark = pytest.mark.slow

MEETINGS = sorted((FIXTURES / "timeline").iterdir())
KICKOFF, UPDATE, NOTES = MEETINGS


def backfill(db, settings, embedder):
    for stage in ("segment", "embed", "extract"):
        run_named_stage(db, settings, stage, 10, embedder=embedder)


def ingest(db, path: Path, embedder, project="office"):
    day = date.fromisoformat(path.name[:10])
    return ingest_file(db, path, embedder, project=project, meeting_date=day)


def backfill_meetings(db, settings, embedder, folder: Path, said: dict[str, str], project: str) -> None:
    """Meetings written as ``said`` (file name -> transcript) into ``folder``, ingested into ``project`` and backfilled."""
    for name, text in said.items():
        (folder / name).write_text(text)
        ingest(db, folder / name, embedder, project=project)
    backfill(db, settings, embedder)


def decisions(db, project="office"):
    rows = db.execute(
        """SELECT k.id, d.meeting_date, k.description, k.status, k.superseded_by FROM decisions k
           JOIN documents d ON d.id = k.document_id WHERE k.project_id = %s ORDER BY d.meeting_date, k.start_char""",
        (project,),
    ).fetchall()
    return {row[2]: row for row in rows}


def about(rows, words):
    """The one row whose text has each of ``words`` as whole words."""
    [row] = [row for text, row in rows.items() if all(re.search(rf"\b{w}\b", text.lower()) for w in words)]
    return row


def tasks(db, project="office"):
    from rag.search.tasks import list_tasks

    return list_tasks(db, "default", project_id=project, status=None, limit=50)


def task_about(db, *words, project="office"):
    [task] = [t for t in tasks(db, project) if all(w in t["description"].lower() for w in words)]
    return task


def risk_status(db, project="office"):
    return dict(db.execute("SELECT description, status FROM risks WHERE project_id = %s", (project,)).fetchall())


@pytest.fixture
def office(db, local_embedder, settings):
    for path in MEETINGS:
        ingest(db, path, local_embedder)
    backfill(db, settings, local_embedder)
    return db


def test_a_decision_changed_twice_is_a_chain_and_the_latest_is_current(office):
    rows = decisions(office)
    march_2, march_16, march_23 = about(rows, ["march 2"]), about(rows, ["march 16"]), about(rows, ["march 23"])
    assert (march_2[3], march_2[4]) == ("superseded", march_16[0])
    assert (march_16[3], march_16[4]) == ("superseded", march_23[0])
    assert (march_23[3], march_23[4]) == ("current", None)
    budget = about(rows, ["furniture budget"])
    assert (budget[3], budget[4]) == ("current", None)


def test_tasks_done_and_handed_over_later_with_the_evidence_cited(office):
    quotes = task_about(office, "quotes")
    assert (quotes["status"], quotes["assignee"], quotes["due_date"]) == ("done", "Mark Feld", date(2026, 1, 23))
    [done] = quotes["changes"]
    assert done["change"] == "done" and done["evidence"].startswith("I sent the three removal quotes on Thursday")
    assert (done["meeting_date"], done["start_turn"]) == ("2026-01-26", 1)

    seating = task_about(office, "draft the seating plan")
    assert (seating["status"], seating["assignee"]) == ("done", "Mark Feld")
    assert [c["change"] for c in seating["changes"]] == ["reassigned", "done"]
    assert seating["changes"][0]["new_value"] == "Mark Feld"
    assert "seating plan is finished" in seating["changes"][1]["evidence"]

    booking = task_about(office, "book atlas")
    assert (booking["status"], booking["assignee"], booking["changes"]) == ("open", "Ines Duarte", [])


def test_a_risk_said_to_be_closed_is_closed(office):
    [(cabling, status)] = [(d, s) for d, s in risk_status(office).items() if "cabling" in d]
    assert status == "closed"


def test_deleting_a_later_meeting_undoes_what_it_changed(office):
    from rag.store.documents import delete_by_key

    delete_by_key(office, "rag-documents", f"projects/office/{NOTES.name}")
    rows = decisions(office)
    assert about(rows, ["march 16"])[3:] == ("current", None)
    assert about(rows, ["march 2"])[3] == "superseded"
    seating = task_about(office, "draft the seating plan")
    assert (seating["status"], seating["assignee"], len(seating["changes"])) == ("open", "Mark Feld", 1)

    delete_by_key(office, "rag-documents", f"projects/office/{UPDATE.name}")
    assert about(decisions(office), ["march 2"])[3:] == ("current", None)
    assert task_about(office, "quotes")["status"] == "open"
    assert task_about(office, "draft the seating plan")["assignee"] == "Ines Duarte"
    assert [s for d, s in risk_status(office).items() if "cabling" in d] == ["open"]


def test_reingesting_the_middle_meeting_relinks_the_chain(office, local_embedder, settings):
    before = {text: row[3] for text, row in decisions(office).items()}
    ingest(office, UPDATE, local_embedder)  # a new version of the same object: its items go, the project relinks
    rows = decisions(office)  # until it is extracted again, the March 23 move replaces the March 2 one directly
    assert about(rows, ["march 2"])[3:] == ("superseded", about(rows, ["march 23"])[0])
    assert task_about(office, "quotes")["status"] == "open"
    backfill(office, settings, local_embedder)
    assert {text: row[3] for text, row in decisions(office).items()} == before
    assert task_about(office, "quotes")["status"] == "done"


def test_meetings_backfilled_out_of_order_link_the_same(db, local_embedder, settings):
    ingest(db, NOTES, local_embedder)
    backfill(db, settings, local_embedder)
    ingest(db, KICKOFF, local_embedder)
    backfill(db, settings, local_embedder)
    ingest(db, UPDATE, local_embedder)
    backfill(db, settings, local_embedder)
    rows = decisions(db)
    assert [about(rows, [day])[3] for day in ("march 2", "march 16", "march 23")] == ["superseded", "superseded", "current"]
    assert task_about(db, "draft the seating plan")["status"] == "done"


def test_projects_never_link_across_each_other(db, local_embedder, settings):
    ingest(db, KICKOFF, local_embedder, project="office")
    ingest(db, UPDATE, local_embedder, project="elsewhere")
    backfill(db, settings, local_embedder)
    assert about(decisions(db, "office"), ["march 2"])[3:] == ("current", None)
    assert task_about(db, "quotes", project="office")["status"] == "open"
    assert db.execute("SELECT count(*) FROM knowledge_changes WHERE target_id IS NOT NULL").fetchone()[0] == 0


def test_search_results_say_which_decision_is_current_and_what_replaced_the_others(office, local_embedder, settings):
    from rag.search import service
    from rag.search.engine import SearchScope

    query = service.SearchQuery(
        "when do we move into the Harbor Street office?", SearchScope("default", ("office",)), types=("decision",), top_k=5
    )
    ranked, _ = service.run_search(office, local_embedder, settings, query)
    by_content = {hit.content: hit for _, hit in ranked}
    rows = decisions(office)
    for text, (_id, _day, _description, status, superseded_by) in rows.items():
        hit = by_content[text]
        assert (hit.metadata["status"], hit.metadata["superseded_by"]) == (status, superseded_by)
    assert by_content[about(rows, ["march 2"])[2]].metadata["status"] == "superseded"


def test_two_extractions_of_one_project_at_once_link_as_one_would(db, local_embedder, settings, database_url, monkeypatch):
    """Two backfill workers extract the two meetings of a project at the same moment: the project's lock orders
    them, so the second one's relink sees the first one's items (without it, each would see only its own)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from rag.store import timeline
    from rag.store.connection import connect

    for path in (KICKOFF, UPDATE):
        ingest(db, path, local_embedder)
    for stage in ("segment", "embed"):
        run_named_stage(db, settings, stage, 10, embedder=local_embedder)
    both_writing = threading.Barrier(2)
    relink = timeline.relink

    def relink_together(conn, tenant_id, project_id):  # both relink at once, unless one waits on the lock
        try:
            both_writing.wait(timeout=3)
        except threading.BrokenBarrierError:
            pass
        return relink(conn, tenant_id, project_id)

    monkeypatch.setattr(timeline, "relink", relink_together)

    def worker(_):
        with connect(database_url) as conn:
            return run_named_stage(conn, settings, "extract", 1, embedder=local_embedder).processed

    with ThreadPoolExecutor(2) as pool:
        assert sum(pool.map(worker, range(2))) == 2
    rows = decisions(db)
    assert [about(rows, [day])[3] for day in ("march 2", "march 16")] == ["superseded", "current"]
    assert (task_about(db, "quotes")["status"], task_about(db, "draft the seating plan")["assignee"]) == ("done", "Mark Feld")


def test_a_task_that_says_nothing_of_itself_is_about_what_was_said_before_it(db, local_embedder, settings, tmp_path):
    said = {
        "2026-03-02-facilities.txt": "Ines Duarte: Morning. The parking permits for the new building, who wants them?\n"
        "Mark Feld: I'll take it.\nInes Duarte: Thanks, that's all for today.\n",
        "2026-03-16-facilities-update.txt": "Ines Duarte: Quick round of updates.\n"
        "Mark Feld: The parking permits came through on Friday.\nInes Duarte: Great.\n",
    }
    backfill_meetings(db, settings, local_embedder, tmp_path, said, project="facilities")

    [(context,)] = db.execute("SELECT context FROM tasks WHERE project_id = 'facilities'").fetchall()
    assert context == "Morning. The parking permits for the new building, who wants them?"  # the words, not the speakers
    task = task_about(db, "take it", project="facilities")
    assert (task["status"], task["assignee"]) == ("done", "Mark Feld")
    assert [c["evidence"] for c in task["changes"]] == ["The parking permits came through on Friday."]


def test_a_change_naming_only_the_new_choice_replaces_the_choice_said_around_it(db, local_embedder, settings, tmp_path):
    said = {
        "2026-03-02-bikes.txt": "Ines Duarte: Pedalink is cheaper, but Urbanvolt can deliver by May.\n"
        "Mark Feld: May matters more to me.\nInes Duarte: Then we go with Urbanvolt as the e-bike supplier.\n",
        "2026-03-16-bikes-update.txt": "Mark Feld: Urbanvolt now say sixteen weeks, so we can't make June with them.\n"
        "Ines Duarte: Then we switch to Pedalink.\n",
    }
    backfill_meetings(db, settings, local_embedder, tmp_path, said, project="bikes")

    rows = decisions(db, project="bikes")
    urbanvolt, pedalink = about(rows, ["urbanvolt"]), about(rows, ["pedalink"])
    assert (urbanvolt[3], urbanvolt[4], pedalink[3]) == ("superseded", pedalink[0], "current")
    [(context,)] = db.execute("SELECT context FROM decisions WHERE id = %s", (pedalink[0],)).fetchall()
    assert context == "Urbanvolt now say sixteen weeks, so we can't make June with them."
