"""Task owners: one canonical form per person, from speaker labels and the names people say."""

from __future__ import annotations

from datetime import date

import pytest

from rag.backfill.rules import extract_by_rules
from rag.backfill.units import Unit
from rag.people import People, clean_label

MONDAY = date(2026, 11, 9)
TEAMS = People.of(["Dana Kim (Firmware)", "Marcus Lee (Product)", "Priya Raman", "Dana Kim (Firmware)"])


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("Dana Kim (Firmware)", "Dana Kim"),
        ("  Marcus   Lee [Contoso] ", "Marcus Lee"),
        ("Jo Park (Ops) (Guest)", "Jo Park"),
        ("Project Manager", "Project Manager"),
        ("Speaker 1", "Speaker 1"),
    ],
)
def test_a_label_loses_its_qualifiers_only(label, expected):
    assert clean_label(label) == expected


@pytest.mark.parametrize(
    ("mention", "expected"),
    [
        ("Dana Kim (Firmware)", "Dana Kim"),  # the speaker label of "I'll ..."
        ("Dana", "Dana Kim"),  # "Dana, can you ..."
        ("dana", "Dana Kim"),
        ("DANA KIM", "Dana Kim"),
        ("Kim", "Dana Kim"),  # her surname alone
        ("Marcus", "Marcus Lee"),
        ("Priya", "Priya Raman"),
        ("Tom", "Tom"),  # not in the meeting: as said
        ("", None),
        (None, None),
    ],
)
def test_a_mention_resolves_to_the_participants_one_form(mention, expected):
    assert TEAMS.canonical(mention) == expected


def test_the_meeting_has_one_entry_per_person_form():
    assert TEAMS.names == ("Dana Kim", "Marcus Lee", "Priya Raman")


def test_a_title_in_the_label_names_its_person():
    committee = People.of(["Maria Okafor (Chair)", "Daniel Ortiz (Police Chief)", "Sam Greene (Parks)", "Ann Lo (Parks)"])
    assert [committee.canonical(t) for t in ("Chief", "chair", "Parks", "Police")] == [
        "Daniel Ortiz",
        "Maria Okafor",
        "Parks",  # two people's department: no one in particular
        "Daniel Ortiz",
    ]


def test_a_shared_first_name_is_not_guessed():
    people = People.of(["Dana Kim", "Dana Lee", "Sam"])
    assert people.canonical("Dana") == "Dana"
    assert people.canonical("Dana Lee") == "Dana Lee"
    assert people.canonical("Lee") == "Dana Lee"
    assert people.canonical("Sam") == "Sam"


def test_the_projects_known_names_give_a_short_label_its_full_form():
    people = People.of(["Dana", "Marcus"], known=["Dana Kim", "Priya Raman"])
    assert people.canonical("Dana") == "Dana Kim"
    assert people.canonical("Marcus") == "Marcus"
    assert people.canonical("Priya") == "Priya Raman"
    assert people.canonical("Kim") == "Dana Kim"


def test_the_meetings_own_speakers_decide_before_the_projects_names():
    people = People.of(["Dana Kim (Firmware)", "Marcus Lee"], known=["Dana Lee", "Dana Kim"])
    assert people.canonical("Dana") == "Dana Kim"  # this meeting's Dana, not another Dana of the project
    assert People.of(["Dana"], known=["Dana Kim", "Dana Lee"]).canonical("Dana") == "Dana"  # two fit: as labelled


def test_role_and_generic_labels_stay_as_they_are():
    ami = People.of(["Project Manager", "Marketing", "User Interface", "Industrial Designer"])
    assert [ami.canonical(r) for r in ("Project Manager", "Marketing", "project manager")] == [
        "Project Manager",
        "Marketing",
        "Project Manager",
    ]
    generic = People.of(["Speaker 1", "Speaker 2"])
    assert generic.canonical("Speaker 2") == "Speaker 2"
    assert generic.canonical("Speaker") == "Speaker"  # names neither


TUESDAY = date(2026, 11, 10)


def _units(*turns: tuple[str, str]) -> list[Unit]:
    units, offset = [], 0
    for turn, (speaker, text) in enumerate(turns):
        units.append(Unit(offset, offset + len(text), text, turn, speaker))
        offset += len(text) + 1
    return units


def _tasks(units: list[Unit], people: People | None = None) -> list[tuple[int | None, str | None, date | None]]:
    items = extract_by_rules(units, segment_id=1, meeting_date=TUESDAY, people=people)
    return [(i.start_turn, i.fields["assignee"], i.fields["due_date"]) for i in items if i.kind == "task"]


def test_tasks_of_a_teams_meeting_are_owned_by_canonical_names():
    # Speaker labels as a Teams .vtt gives them: <v Dana Kim (Firmware)>.
    units = _units(
        ("Marcus Lee (Product)", "Dana, can you check the battery cut-off before the OTA rollout by Friday?"),
        ("Dana Kim (Firmware)", "Sure, and I'll have a prototype on the bench by the end of next week."),
        ("Dana Kim (Firmware)", "Marcus, please send the updated spec to the supplier tomorrow."),
        ("Priya Raman", "Action item for Kim: the release notes."),
        ("Marcus Lee (Product)", "Can you draft the test plan?"),
        ("Priya Raman", "Will do."),
    )
    assert _tasks(units) == [
        (0, "Dana Kim", date(2026, 11, 20)),  # asked for Friday, taken on for the end of next week
        (2, "Marcus Lee", date(2026, 11, 11)),
        (3, "Dana Kim", None),
        (4, "Priya Raman", None),  # answered "Will do." by Priya
    ]


def test_a_full_name_in_a_request_is_the_person():
    units = _units(("Marcus Lee (Product)", "Dana Kim, can you send the logs by March 2?"), ("Dana Kim (Firmware)", "Yes."))
    assert _tasks(units) == [(0, "Dana Kim", date(2027, 3, 2))]


def test_the_documents_speakers_name_a_person_who_does_not_speak_in_the_segment():
    units = _units(("Marcus Lee (Product)", "Dana, can you send the logs?"))
    everyone = People.of(["Dana Kim (Firmware)", "Marcus Lee (Product)"])
    assert _tasks(units) == [(0, "Dana", None)]  # the segment alone does not know her
    assert _tasks(units, everyone) == [(0, "Dana Kim", None)]


def test_ami_role_labels_own_their_tasks_as_labelled():
    units = _units(
        ("Project Manager", "I'll send the minutes to everyone by tomorrow."),
        ("Marketing", "The industrial designer will look at the case materials."),
        ("Industrial Designer", "Yes, I will bring two samples next Tuesday."),
    )
    assert _tasks(units) == [
        (0, "Project Manager", date(2026, 11, 11)),
        (1, "Industrial Designer", None),
        (2, "Industrial Designer", date(2026, 11, 17)),
    ]


@pytest.mark.slow
def test_stored_tasks_name_one_form_per_person_across_a_projects_meetings(db, local_embedder, settings):
    from rag.backfill.stages import run_named_stage
    from tests.backfill.conftest import FIXTURES, ingest_file

    def backfill():
        for stage in ("segment", "embed", "extract"):
            run_named_stage(db, settings, stage, 10, embedder=local_embedder)

    def tasks(doc):
        return db.execute(
            "SELECT start_turn, assignee, due_date FROM tasks WHERE document_id = %s ORDER BY start_char", (doc,)
        ).fetchall()

    transcripts = FIXTURES / "transcripts"
    kickoff = ingest_file(db, transcripts / "ota_rollout_kickoff.vtt", local_embedder, project="lamp", meeting_date=MONDAY)
    backfill()
    assert tasks(kickoff) == [
        (1, "Dana Kim", date(2026, 11, 13)),  # "I'll have a prototype on the bench by Friday" (a Teams label)
        (2, "Priya Raman", date(2026, 11, 10)),  # "Priya, can you book the test chamber" "Sure, I will book it tomorrow"
        (4, "Dana Kim", date(2026, 11, 20)),  # "Dana, please send ... by the end of next week" "Will do."
    ]
    # A later meeting labels its speakers by first name; the project knows who they are.
    followup = ingest_file(db, transcripts / "ota_rollout_followup.txt", local_embedder, project="lamp", meeting_date=TUESDAY)
    backfill()
    assert tasks(followup) == [
        (2, "Dana Kim", date(2027, 3, 2)),  # "Kim, can you write up the rollback steps by March 2?" "Yes, I'll ..."
        (4, "Priya Raman", date(2026, 11, 24)),  # "in two weeks"
        (5, "Marcus Lee", date(2026, 11, 11)),  # "EOD tomorrow"
    ]


def test_a_request_and_its_accepting_answer_are_one_task_with_the_answers_date():
    units = _units(
        ("Marco Reyes", "Dana, can you look at a battery check before the update starts?"),
        ("Dana Kim (Firmware)", "Yes."),
        ("Dana Kim (Firmware)", "I'll have a prototype of the battery guard on the bench by Friday."),
        ("Marco Reyes", "Tom, can you ask them for a quote on forty thousand?"),
        ("Priya Nair", "I'll check the warehouse space by Thursday."),  # not Tom: a task of her own
        ("Marco Reyes", "Can you also send the BOM?"),
        ("Tom Becker", "Sure, I'll get that to you by February 13."),
    )
    # "Yes." and "I'll have ..." are one turn in a transcript: give them the same turn.
    units[2] = Unit(units[2].start_char, units[2].end_char, units[2].text, 1, units[2].speaker)
    items = [i for i in extract_by_rules(units, segment_id=1, meeting_date=date(2026, 2, 2)) if i.kind == "task"]
    assert [(i.start_turn, i.end_turn, i.fields["assignee"], i.fields["due_date"]) for i in items] == [
        (0, 1, "Dana Kim", date(2026, 2, 6)),  # the request, taken on with a date
        (3, 3, "Tom Becker", None),  # Tom does not answer: the request stays open to him
        (4, 4, "Priya Nair", date(2026, 2, 5)),
        (5, 6, "Tom Becker", date(2026, 2, 13)),
    ]
    first = items[0]
    assert first.description == "Dana, can you look at a battery check before the update starts?"
    assert first.evidence == " ".join(u.text for u in units[:3])
    assert (first.start_char, first.end_char, first.speakers) == (
        units[0].start_char,
        units[2].end_char,
        ("Marco Reyes", "Dana Kim (Firmware)"),
    )


def test_any_extractors_task_gets_the_canonical_owner_and_other_items_stay():
    from rag.backfill.extract import owned
    from rag.backfill.models import KnowledgeItem

    people = People.of(["Dana Kim (Firmware)", "Marcus Lee"])
    task = KnowledgeItem(
        "task", "Send the logs", "Dana, send the logs.", 0, 20, "llm", fields={"assignee": "dana", "due_date": None}
    )
    assert owned(task, people).fields == {"assignee": "Dana Kim", "due_date": None}
    unowned = KnowledgeItem("task", "Send the logs", "Someone send the logs.", 0, 20, "llm", fields={"assignee": None})
    assert owned(unowned, people) is unowned
    decision = KnowledgeItem("decision", "Ship it", "We ship.", 0, 8, "llm", fields={"owner": "dana"})
    assert owned(decision, people) is decision


def test_a_transcript_item_keeps_the_words_said_just_before_it_without_speakers():
    from uuid import uuid4

    from rag.backfill.documents import ClaimedDocument, turn_spans
    from rag.backfill.extract import CONTEXT_CHARS, DECISION_CONTEXT_CHARS, in_context
    from rag.backfill.models import KnowledgeItem

    lines = [f"Ana Ruiz: Filler turn number {n} about nothing much." for n in range(2000)]
    lines += ["Ana Ruiz: The parking permits for the new building, who wants them?", "Ben Okafor: I'll take it."]
    body, turns, start = "", [], 0
    for line in lines:
        turns.append([line.split(":")[0], start, start + len(line)])
        body += line + "\n"
        start += len(line) + 1
    document = ClaimedDocument(uuid4(), "t", "p", "meeting", "transcript-txt", None, None, body, turn_spans(body, turns), None)
    at = body.index("I'll take it.")
    task = KnowledgeItem("task", "I'll take it.", "I'll take it.", at, at + 13, "rules", start_turn=2001)
    context = in_context(task, document).context
    # the utterances of the turns reaching into the last CONTEXT_CHARS characters of the transcript before it
    assert CONTEXT_CHARS == 200 and context == (
        "Filler turn number 1997 about nothing much. Filler turn number 1998 about nothing much. "
        "Filler turn number 1999 about nothing much. The parking permits for the new building, who wants them?"
    )
    assert "Ana Ruiz" not in context and "Ben Okafor" not in context
    # a decision keeps more: a change often names only the new choice, and the old one was said further back
    decision = KnowledgeItem("decision", "I'll take it.", "I'll take it.", at, at + 13, "rules", start_turn=2001)
    decided = in_context(decision, document).context or ""
    assert DECISION_CONTEXT_CHARS == 400 and decided.endswith(context) and decided.startswith("Filler turn number 1994")
    notes = KnowledgeItem("task", "Send it", "Send it", at, at + 5, "sections")  # no turn: notes, no context
    assert in_context(notes, document) is notes
    risk = KnowledgeItem("risk", "Late", "Late", at, at + 4, "rules", start_turn=2001)
    assert in_context(risk, document) is risk
