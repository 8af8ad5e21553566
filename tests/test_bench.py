"""Every benchmark script still starts: `--help` exits 0 with its usage (they import each other and the library)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
MODULES = {"common.py", "bare_pgvector.py", "oracle_model.py"}  # imported by the scripts, not run
SCRIPTS = sorted(p for p in BENCH.glob("*.py") if p.name not in MODULES)


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_the_script_starts_and_explains_itself(script):
    done = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("usage:")


def test_every_script_is_checked():
    assert {p.name for p in SCRIPTS} >= {"query_latency.py", "peer_stores.py", "write_path.py", "retrieval_variants.py"}


def import_bench(name: str) -> Any:
    """A script of bench/ as a module (bench/ is no package: its folder goes on the path while it loads)."""
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module(name)  # a peer is imported only once it is set up: this runs in the venv
    finally:
        sys.path.remove(str(BENCH))


def labelled_projects(filename: str) -> list[Path]:
    """The project folders of bench/projects and bench/heldout that hold ``filename``."""
    return sorted(p for folder in (BENCH / "projects", BENCH / "heldout") for p in folder.iterdir() if (p / filename).is_file())


def test_the_peers_table_scores_each_path_against_the_exact_ids_and_counts_short_answers():
    peer_stores = import_bench("peer_stores")
    exact = [list(range(10)), list(range(10, 20))]
    full = peer_stores.timing("full", lambda i, projects: exact[i])
    short = peer_stores.timing("short", lambda i, projects: exact[i][:3] + [99])

    lines = peer_stores.measure([full, short], exact, "10%", ["p10"])

    assert [line.split()[1] for line in lines] == ["full", "short"]
    assert lines[0].split()[4] == "1.000" and "rows returned" not in lines[0]
    assert lines[1].split()[4] == "0.300" and lines[1].endswith("rows returned: mean 4.0, min 4")


def test_the_peers_are_also_timed_on_the_queries_where_every_path_returned_ten_rows():
    peer_stores = import_bench("peer_stores")
    exact = [list(range(k, k + 10)) for k in (0, 10, 20)]
    full = peer_stores.timing("full", lambda i, projects: exact[i])
    short_once = peer_stores.timing("short", lambda i, projects: exact[i][:4] if i == 1 else exact[i])

    lines = peer_stores.measure([full, short_once], exact, "10%", ["p10"])

    assert "(the 2 queries where every path returned 10 rows)" in lines[2]
    assert [line.split()[1] for line in lines[3:]] == ["full", "short"] and len(lines[3].split()) == 4


def test_knowledge_items_match_labels_of_their_kind_meeting_and_turns_and_later_mentions_count_for_nothing():
    kq = import_bench("knowledge_quality")
    Place, Label, Extracted = kq.Place, kq.Label, kq.Extracted
    labels = [
        Label("D1", "decision", Place("a.txt", 3, 4), "q", updates=(Place("b.txt", 7, 7),)),
        Label("R1", "risk", Place("a.txt", 9, 9), "q"),
    ]
    extracted = [
        Extracted(1, "decision", Place("a.txt", 4, 4)),  # overlaps D1: right
        Extracted(2, "decision", Place("a.txt", 3, 3)),  # a duplicate of D1: wrong
        Extracted(3, "decision", Place("c.txt", 3, 4)),  # same turns, another meeting: wrong
        Extracted(4, "risk", Place("a.txt", 3, 3)),  # D1's turn, another kind: wrong
        Extracted(5, "decision", Place("b.txt", 6, 8)),  # D1 reported again later: neither
    ]

    matching = kq.match(labels, extracted)
    figures = kq.score(labels, extracted, matching)

    assert matching.pairs["D1"].id == 2  # the narrowest first, then the one starting nearest the label
    assert [i.id for i in matching.false_positives] == [1, 3, 4] and [i.id for i in matching.neutral] == [5]
    # two items of one turn: the one whose description holds the quote, whichever was stored first
    quoted = Label("D2", "decision", Place("d.txt", 19, 19), "We launch on 15 June instead")
    reasons = Extracted(6, "decision", Place("d.txt", 19, 19), "Ten weeks takes us to the end of May.")
    launch = Extracted(7, "decision", Place("d.txt", 19, 19), "We launch on 15 June, instead.")
    assert kq.match([quoted], [reasons, launch]).pairs["D2"] is launch
    # nothing where a label sits: the same decision said again in its own meeting (notes' prose, then their list)
    prose = Label("D3", "decision", Place("n.md", 13, 13), "q", updates=(Place("n.md", 49, 49),))
    assert kq.match([prose], [Extracted(8, "decision", Place("n.md", 49, 49))]).pairs["D3"].id == 8
    assert figures["decision_precision"] == {"value": 0.333, "n": 1, "of": 3}
    assert figures["decision_recall"] == {"value": 1.0, "n": 1, "of": 1}
    assert figures["risk_precision"] == {"value": 0.0, "n": 0, "of": 1}
    assert figures["risk_recall"] == {"value": 0.0, "n": 0, "of": 1}
    assert figures["task_recall"] == {"value": None, "n": 0, "of": 0}


def test_task_owner_due_and_status_are_scored_on_the_matched_tasks_against_their_state_after_all_meetings():
    kq = import_bench("knowledge_quality")
    Place, Label, Extracted = kq.Place, kq.Label, kq.Extracted
    d = kq.date
    labels = [
        Label("T1", "task", Place("m.vtt", 1, 2), "q", owner="Dana Kim", due=d(2026, 2, 13), status="done"),
        Label("T2", "task", Place("m.vtt", 5, 5), "q", owner="Tom Becker", due=None, status="open"),
        Label("T3", "task", Place("m.vtt", 8, 8), "q", owner="Priya Nair", due=d(2026, 3, 2), status="cancelled"),
        Label("T4", "task", Place("n.md", 12, 12), "q", owner="Elena Rossi", due=None, status="open"),  # missed
    ]
    extracted = [
        Extracted(1, "task", Place("m.vtt", 2, 2), assignee="dana  kim", due=d(2026, 2, 13), status="open"),
        Extracted(2, "task", Place("m.vtt", 5, 5), assignee="Tom", due=None, status="blocked"),
        Extracted(3, "task", Place("m.vtt", 7, 9), assignee="Priya Nair", due=d(2026, 3, 3), status="canceled"),
    ]

    figures = kq.score(labels, extracted, kq.match(labels, extracted))

    assert figures["task_precision"]["value"] == 1.0 and figures["task_recall"] == {"value": 0.75, "n": 3, "of": 4}
    assert figures["task_owner_right"] == {"value": 0.667, "n": 2, "of": 3}  # "Tom" is not the canonical name
    assert figures["task_due_right"] == {"value": 0.667, "n": 2, "of": 3}  # no date for no date is right
    assert figures["task_status_right"] == {"value": 0.667, "n": 2, "of": 3}  # blocked is open, canceled cancelled
    assert figures["task_status_right_changed_later"] == {"value": 0.5, "n": 1, "of": 2}


def test_a_superseded_decision_is_recognised_when_its_item_is_marked_and_any_link_points_to_its_successor():
    kq = import_bench("knowledge_quality")
    Place, Label, Extracted = kq.Place, kq.Label, kq.Extracted
    labels = [
        Label("D1", "decision", Place("a.txt", 1, 1), "q", superseded_by="D4"),
        Label("D2", "decision", Place("a.txt", 2, 2), "q", superseded_by="D4"),
        Label("D3", "decision", Place("a.txt", 3, 3), "q", superseded_by="D4"),
        Label("D5", "decision", Place("a.txt", 5, 5), "q", superseded_by="D4"),  # never extracted
        Label("D4", "decision", Place("b.txt", 0, 0), "q"),
    ]
    extracted = [
        Extracted(1, "decision", Place("a.txt", 1, 1), status="superseded"),  # marked, no link: recognised
        Extracted(2, "decision", Place("a.txt", 2, 2), superseded_by=40),  # linked to D4's item: recognised
        Extracted(3, "decision", Place("a.txt", 3, 3), superseded_by=2),  # linked to another: not
        Extracted(40, "decision", Place("b.txt", 0, 0), status="agreed"),
    ]

    figures = kq.score(labels, extracted, kq.match(labels, extracted))

    assert figures["superseded_recognised"] == {"value": 0.5, "n": 2, "of": 4}
    assert "| superseded decisions recognised | 2 of 4 |" in kq.format_table(figures)
    assert "| decisions precision / recall | 1.00 (4/4) / 0.80 (4/5) |" in kq.format_table(figures)


def test_cross_validated_folds_hold_out_every_kth_project_and_keep_each_fold_s_items_and_links_apart():
    cv, kq = import_bench("knowledge_cv"), import_bench("knowledge_quality")
    projects = [Path(name) for name in ("e", "a", "d", "b", "c")]
    assert cv.folds_of(projects, 2) == [[Path("a"), Path("c"), Path("e")], [Path("b"), Path("d")]]
    assert cv.folds_of(projects[:1], 5) == [[Path("e")]]  # no empty fold
    # two folds' databases both number their rows from 1: renumbered, a link still points to its own fold's item
    first = [
        kq.Extracted(1, "decision", kq.Place("a/m.txt", 1, 1), superseded_by=2),
        kq.Extracted(2, "decision", kq.Place("a/n.txt", 0, 0)),
    ]
    second = [
        kq.Extracted(1, "decision", kq.Place("b/m.txt", 1, 1), superseded_by=2),
        kq.Extracted(2, "decision", kq.Place("b/n.txt", 0, 0)),
    ]
    items = [cv.renumbered(i, 1 * cv.FOLD_IDS) for i in first] + [cv.renumbered(i, 2 * cv.FOLD_IDS) for i in second]
    assert len({i.id for i in items}) == 4
    assert [i.superseded_by for i in items] == [1 * cv.FOLD_IDS + 2, None, 2 * cv.FOLD_IDS + 2, None]
    labels = [
        kq.Label("a/D1", "decision", kq.Place("a/m.txt", 1, 1), "q", superseded_by="a/D2"),
        kq.Label("a/D2", "decision", kq.Place("a/n.txt", 0, 0), "q"),
        kq.Label("b/D1", "decision", kq.Place("b/m.txt", 1, 1), "q", superseded_by="b/D2"),
        kq.Label("b/D2", "decision", kq.Place("b/n.txt", 0, 0), "q"),
    ]
    figures = kq.score(labels, items, kq.match(labels, items))
    assert "| decisions precision / recall | 1.00 (4/4) / 1.00 (4/4) |" in kq.format_table(figures)
    assert "| superseded decisions recognised | 2 of 2 |" in kq.format_table(figures)


def test_a_link_to_the_successor_said_again_in_its_own_meeting_counts_but_not_in_a_later_one():
    kq = import_bench("knowledge_quality")
    Place, Label, Extracted = kq.Place, kq.Label, kq.Extracted
    # notes: the prose decides (line 3), the "## Decisions" list says it again (line 9); a later meeting too
    said_again = (Place("b.md", 9, 9), Place("c.txt", 4, 4))
    labels = [
        Label("D1", "decision", Place("a.txt", 1, 1), "q", superseded_by="D4"),
        Label("D2", "decision", Place("a.txt", 2, 2), "q", superseded_by="D4"),
        Label("D4", "decision", Place("b.md", 3, 3), "q", updates=said_again),
    ]
    extracted = [
        Extracted(1, "decision", Place("a.txt", 1, 1), superseded_by=90),  # the notes' list: recognised
        Extracted(2, "decision", Place("a.txt", 2, 2), superseded_by=91),  # the later meeting's: not
        Extracted(40, "decision", Place("b.md", 3, 3)),
        Extracted(90, "decision", Place("b.md", 9, 9)),
        Extracted(91, "decision", Place("c.txt", 4, 4)),
    ]

    figures = kq.score(labels, extracted, kq.match(labels, extracted))

    assert figures["superseded_recognised"] == {"value": 0.5, "n": 1, "of": 2}


def test_markdown_items_are_placed_on_the_lines_their_characters_span():
    kq = import_bench("knowledge_quality")
    body = "# Notes\n\n## Decisions\n\n- Price is $89.\n- Two colors.\n"

    assert kq.line_range(body, body.index("- Price"), body.index("- Two") - 1) == (5, 5)
    assert kq.line_range(body, body.index("- Price"), len(body)) == (5, 6)
    assert kq.line_range(body, 0, 0) == (1, 1)


def test_the_labelled_projects_quote_the_turns_and_lines_the_parsers_give():
    from rag.parsing import parse_document

    kq = import_bench("knowledge_quality")
    projects = labelled_projects("labels.jsonl")
    assert len(projects) >= 6
    for project in projects:
        labels = kq.load_labels(project / "labels.jsonl")
        places = {}
        for path in kq.meeting_files(project):
            parsed = parse_document(path.read_bytes(), path.name)
            places[f"{project.name}/{path.name}"] = [t.text for t in parsed.turns] if parsed.turns else parsed.text.split("\n")
        assert {path.suffix for path in kq.meeting_files(project)} == {".txt", ".vtt", ".srt", ".json", ".md"}
        assert kq.check_quotes(labels, places) == []
        assert {label.kind for label in labels} == set(kq.KINDS)


def test_a_label_quoting_words_its_place_does_not_hold_is_reported():
    kq = import_bench("knowledge_quality")
    label = kq.parse_label(
        {"id": "T1", "kind": "task", "meeting": "a.txt", "turns": [1, 1], "quote": "by Friday", "owner": "Dana Kim",
         "due": "2026-02-06", "status": "done",
         "updates": [{"meeting": "b.md", "line": 2, "quote": "prototype done", "change": "done"}]}
    )  # fmt: skip

    wrong = kq.check_quotes([label], {"a.txt": ["Hi.", "I'll have it by friday."], "b.md": ["# B", "- nothing yet"]})

    assert label.due == kq.date(2026, 2, 6) and label.updates == (kq.Place("b.md", 2, 2),)
    assert wrong == ["T1 update 0: 'prototype done' is not in Place(meeting='b.md', first=2, last=2)"]


def test_items_of_different_kinds_may_share_an_id_each_table_numbers_its_own_rows():
    kq = import_bench("knowledge_quality")
    Place, Label, Extracted = kq.Place, kq.Label, kq.Extracted
    labels = [Label("D1", "decision", Place("a.txt", 1, 1), "q"), Label("T1", "task", Place("a.txt", 1, 1), "q")]
    extracted = [Extracted(1, "decision", Place("a.txt", 1, 1)), Extracted(1, "task", Place("a.txt", 1, 1))]

    matching = kq.match(labels, extracted)
    figures = kq.score(labels, extracted, matching)

    assert matching.pairs["D1"].kind == "decision" and matching.pairs["T1"].kind == "task"
    assert figures["decision_recall"]["value"] == figures["task_recall"]["value"] == 1.0
    assert matching.false_positives == [] and matching.neutral == []


def test_the_oracle_model_answers_what_the_labels_say_of_the_lines_it_is_shown(tmp_path):
    """bench/oracle_model.py reads only the prompt: the lines, the meeting date and the earlier items' labels."""
    import json

    sys.path.insert(0, str(BENCH))
    from oracle_model import OracleModel

    labels = [
        {"id": "D1", "kind": "decision", "meeting": "2026-01-12-kickoff.txt", "turns": [1, 1], "quote": "we move on March 2",
         "statement": "Move on March 2", "superseded_by": "D2"},
        {"id": "D2", "kind": "decision", "meeting": "2026-01-26-update.vtt", "turns": [3, 3], "quote": "March 16 instead",
         "statement": "Move on March 16", "superseded_by": None},
        {"id": "T1", "kind": "task", "meeting": "2026-01-12-kickoff.txt", "turns": [2, 2], "quote": "get three quotes",
         "statement": "Get three removal quotes", "owner": "Ines Duarte", "assigned_to": "Mark Feld",
         "due": "2026-01-30", "first_due": "2026-01-23", "status": "done",
         "updates": [{"meeting": "2026-01-26-update.vtt", "turns": [4, 4], "quote": "Ines will take the quotes over",
                      "change": "handed_over"},
                     {"meeting": "2026-01-26-update.vtt", "turns": [1, 1], "quote": "I sent the quotes", "change": "done"}]},
    ]  # fmt: skip
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(label) + "\n" for label in labels))
    other = tmp_path / "other"  # another project numbering its labels alike: never mixed in
    other.mkdir()
    unrelated = {**labels[0], "id": "D0", "quote": "we move on April 9", "statement": "Move on April 9", "superseded_by": "D2"}
    (other / "labels.jsonl").write_text(json.dumps(unrelated) + "\n")
    oracle = OracleModel([other / "labels.jsonl", tmp_path / "labels.jsonl"])

    def ask(prompt):
        body = {
            "response_format": {"json_schema": {"name": "ProposedKnowledge"}},
            "messages": [{"role": "system", "content": "Extract."}, {"content": prompt}],
        }
        return oracle(body)

    kickoff = "Meeting date: 2026-01-12\nSegment: move\n\n[1] Ines: So we move on March 2.\n[2] Ines: Mark, get three quotes."
    first = ask(kickoff)
    assert [(d["first"], d["description"], d["supersedes"]) for d in first["decisions"]] == [(1, "Move on March 2", None)]
    assert [(t["first"], t["assignee"], t["due_date"]) for t in first["tasks"]] == [(2, "Mark Feld", "2026-01-23")]
    assert first["changes"] == []
    # Through Bedrock's Converse: the same answer, as the input of the tool the request makes the model call
    converse = {"toolConfig": {"toolChoice": {"tool": {"name": "ProposedKnowledge"}}}, "system": [{"text": "Extract."}],
                "messages": [{"role": "user", "content": [{"text": kickoff}]}]}  # fmt: skip
    counted = oracle.prompt_tokens
    [block] = oracle.converse(converse)["output"]["message"]["content"]
    assert (block["toolUse"]["name"], block["toolUse"]["input"]) == ("ProposedKnowledge", first)
    assert oracle.prompt_tokens > counted + 20 and oracle.answer_tokens > 0  # the prompt read, the answer written
    recorded = ask("Items this document already lists under its own headings (do not extract them again):\n"
                   "- decision: We move on March 2.\n\nMeeting date: 2026-01-12\nSegment: move\n\n"
                   "[1] Ines: So we move on March 2.")  # fmt: skip
    assert recorded["decisions"] == []  # the prose saying again what the document lists
    second = ask(
        "Earlier items of this project that are still current or open:\n"
        "E1 (decision, 2026-01-12): Move on March 2\nE2 (task, 2026-01-12): Get three removal quotes\n\n"
        "Meeting date: 2026-01-26\nSegment: update\n\n[1] Mark: I sent the quotes.\n[3] Ines: March 16 instead.\n"
        "[4] Ines: Ines will take the quotes over."
    )
    assert [(d["first"], d["supersedes"]) for d in second["decisions"]] == [(3, "E1")]
    # the handover also gives the new date: the label's due date moved and no mention of it reschedules it
    assert [(c["first"], c["item"], c["change"], c["new_owner"], c["new_due_date"]) for c in second["changes"]] == [
        (4, "E2", "reassigned", "Ines Duarte", "2026-01-30"), (1, "E2", "done", None, None)
    ]  # fmt: skip
    listed = oracle({
        "response_format": {"json_schema": {"name": "ListedDecisionLinks"}},
        "messages": [{"role": "system", "content": "Link."},
                     {"content": "Earlier items of this project that are still current or open:\n"
                                 "E1 (decision, 2026-01-12): Move on March 2\n\nMeeting date: 2026-01-26\n"
                                 "Decisions these notes list:\nL1: Budget stays.\nL2: We go March 16 instead."}],
    })  # fmt: skip
    assert listed == {"links": [{"listed": "L2", "supersedes": "E1"}]}
    with pytest.raises(ValueError, match="extraction and listed links only"):
        oracle(
            {
                "response_format": {"json_schema": {"name": "ProposedSegmentation"}},
                "messages": [{"role": "system", "content": "Extract."}, {"content": ""}],
            }
        )


def test_projects_may_number_their_labels_alike(tmp_path):
    import json

    kq = import_bench("knowledge_quality")
    labels = []
    for project in ("one", "two"):
        (tmp_path / project).mkdir()
        entries = [
            {"id": "D1", "kind": "decision", "meeting": "m.txt", "turns": [0, 0], "quote": "q", "superseded_by": "D2"},
            {"id": "D2", "kind": "decision", "meeting": "n.txt", "turns": [0, 0], "quote": "q", "superseded_by": None},
        ]
        (tmp_path / project / "labels.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
        labels += kq.load_labels(tmp_path / project / "labels.jsonl")
    assert [(label.id, label.superseded_by) for label in labels] == [
        ("one/D1", "one/D2"), ("one/D2", None), ("two/D1", "two/D2"), ("two/D2", None)
    ]  # fmt: skip
    items = [kq.Extracted(n, "decision", label.place) for n, label in enumerate(labels)]
    figures = kq.score(labels, items, kq.match(labels, items))
    assert figures["decision_precision"] == {"value": 1.0, "n": 4, "of": 4}


def test_an_answer_is_right_when_it_holds_one_alternative_of_every_expected_phrase_case_and_spacing_ignored():
    aq = import_bench("ask_quality")
    expect = [["Tom"], ["April 24", "24 April"]]

    assert aq.holds("TOM Becker: the packing list, by april  24.", expect)
    assert aq.holds("Tom, by 24\nApril", expect)
    assert not aq.holds("Tom Becker, soon", expect)  # one group unmatched
    assert not aq.holds("Priya, by April 24", expect)


def test_an_answer_cites_the_answer_when_one_citation_is_a_listed_meeting_and_nothing_found_is_told_apart():
    from rag.ask.citations import Passage
    from rag.ask.extractive import NOT_FOUND
    from rag.ask.types import Answer, Cited

    aq = import_bench("ask_quality")
    question = aq.Question("p", "When is the launch?", (("May 26",),), ("c.srt",))
    meeting_of = {"d-a": "a.txt", "d-c": "c.srt"}

    def answer(text: str, *documents: str) -> Answer:
        citations = tuple(Cited(n, Passage("chunk", d, "s3://b/k", None, 0, 9)) for n, d in enumerate(documents, 1))
        return Answer(text, "extractive", citations, ())

    cited = aq.grade(question, answer("Launch on May 26 [2]", "d-a", "d-c"), meeting_of)
    stale = aq.grade(question, answer("Launch on May 5 [1]", "d-a"), meeting_of)
    empty = aq.grade(question, answer(NOT_FOUND), meeting_of)

    assert (cited.right, cited.cites_answer, cited.nothing_found, cited.cited) == (True, True, False, ("a.txt", "c.srt"))
    assert (stale.right, stale.cites_answer) == (False, False)
    assert (empty.right, empty.cites_answer, empty.nothing_found) == (False, False, True)
    figures = aq.figures([cited, stale, empty])
    assert figures["answer_right"] == {"count": 1, "of": 3, "rate": 0.333}
    assert figures["answer_words_median"] == 5  # "Launch on May 26 [2]" and "Launch on May 5 [1]"; NOT_FOUND has 15
    assert aq.format_figures("all", figures).split()[-1] == "5"


def test_the_question_files_name_meetings_that_hold_their_expected_phrases():
    aq = import_bench("ask_quality")
    projects = labelled_projects("questions.jsonl")

    assert len(projects) >= 6
    for project in projects:
        questions = aq.load_questions(project)
        assert len(questions) >= 12
        assert aq.check_questions(project, questions) == []


def test_a_question_whose_meetings_do_not_hold_the_phrase_is_reported(tmp_path):
    aq = import_bench("ask_quality")
    (tmp_path / "2026-01-01-m.txt").write_text("Ann: We launch on May 26.\nBen: Fine.\n")
    questions = [aq.Question(tmp_path.name, "When?", (("May 26",),), ("2026-01-01-m.txt",)),
                 aq.Question(tmp_path.name, "Where?", (("Lisbon",),), ("2026-01-01-m.txt",)),
                 aq.Question(tmp_path.name, "Who?", (("Ann",),), ("missing.txt",))]  # fmt: skip

    wrong = aq.check_questions(tmp_path, questions)

    assert len(wrong) == 2 and "'Where?'" in wrong[0] and "missing.txt" in wrong[1]
