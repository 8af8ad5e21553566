"""``.txt`` transcripts: turn i is the i-th ``Speaker: text`` line; continuations join the turn before."""

from __future__ import annotations

import pytest

from rag.errors import ParseError
from rag.parsing import parse_document
from rag.parsing.transcript_txt import parse_transcript_txt, speaker_line

SPEAKERS = ["Project Manager", "Industrial Designer", "User Interface", "Marketing", "Dr. Smith (Finance)", "Speaker 1"]


def test_design_meeting_turns_speakers_title_and_text(parse_fixture, fixture_bytes):
    doc = parse_fixture("design_meeting.txt")
    assert (doc.kind, doc.format, doc.title) == ("transcript", "transcript-txt", "Remote control redesign, kickoff meeting")
    assert doc.text == fixture_bytes("design_meeting.txt").decode()  # offsets point into the file itself
    assert len(doc.turns) == 22
    assert [t.index for t in doc.turns] == list(range(22))
    assert doc.participants == SPEAKERS
    assert [t.speaker for t in doc.turns[:6]] == [
        "Project Manager",
        "Industrial Designer",
        "User Interface",
        "Project Manager",
        "Industrial Designer",
        "Marketing",
    ]
    assert (doc.turns[0].start_char, doc.turns[0].end_char) == (41, 135)
    assert doc.turns[0].text == "Okay, let's start. The goal today is to agree on the shape of the new remote."
    assert (doc.turns[17].speaker, doc.turns[17].text) == ("Speaker 1", "Could the TV pair automatically on first power-up?")
    assert doc.turns[21].end_char == len(doc.text) - 1  # the file ends with a newline
    assert all(t.start_time is None and t.end_time is None for t in doc.turns)


def test_every_turn_slices_back_to_its_own_lines(parse_fixture):
    doc = parse_fixture("design_meeting.txt")
    for turn in doc.turns:
        lines = doc.text[turn.start_char : turn.end_char].split("\n")
        assert lines[0] == f"{turn.speaker}: {turn.text}"[: len(lines[0])]
        assert " ".join(line.strip() for line in lines) == f"{turn.speaker}: {turn.text}"


def test_continuation_lines_extend_the_turn_before(parse_fixture):
    doc = parse_fixture("design_meeting.txt")
    continued = {t.index: t for t in doc.turns if "\n" in doc.text[t.start_char : t.end_char]}
    assert sorted(continued) == [4, 12, 19]
    assert continued[4].text == (
        "For findability, a locator chime triggered from the TV would work. It would add about forty cents per unit."
    )
    assert doc.text[continued[4].start_char : continued[4].end_char] == (
        "Industrial Designer: For findability, a locator chime triggered from the TV would work.\n"
        "It would add about forty cents per unit."
    )
    assert continued[19].text.endswith(
        "asks the supplier about pairing. And I will write up the decisions for the steering group."
    )


def test_a_blank_line_does_not_shift_the_numbering(parse_fixture):
    doc = parse_fixture("design_meeting.txt")
    assert doc.text[doc.turns[7].end_char : doc.turns[8].start_char] == "\n\n"
    assert (doc.turns[8].index, doc.turns[8].speaker, doc.turns[8].start_char) == (8, "Marketing", 754)


def test_line_i_is_turn_i_with_empty_utterances_and_long_roles():
    # The shape of the QMSum evaluation files: every line a turn, some with nothing said.
    lines = [
        "PhD A: So , which is my bar ?",
        "Grad B: ",
        "The Chair (Hon. Anthony Rota (Nipissing, Lib.)): Order, please.",
        "Hon. Mary Ng (Minister of Small Business, Export Promotion and International Trade): Mr. Chair, yes.",
        "PhD A:",
        "Professor C: Yeah .",
    ]
    doc = parse_document(("\n".join(lines) + "\n").encode(), "Bmr005.txt")
    assert [(t.index, t.speaker, t.text) for t in doc.turns] == [
        (0, "PhD A", "So , which is my bar ?"),
        (1, "Grad B", ""),
        (2, "The Chair (Hon. Anthony Rota (Nipissing, Lib.))", "Order, please."),
        (3, "Hon. Mary Ng (Minister of Small Business, Export Promotion and International Trade)", "Mr. Chair, yes."),
        (4, "PhD A", ""),
        (5, "Professor C", "Yeah ."),
    ]
    assert [doc.text[t.start_char : t.end_char] for t in doc.turns] == lines


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Project Manager: Let's start.", ("Project Manager", "Let's start.")),
        ("Speaker 1: Hello", ("Speaker 1", "Hello")),
        ("Dr. Smith: The numbers: fine.", ("Dr. Smith", "The numbers: fine.")),
        ("PhD C: uh-huh", ("PhD C", "uh-huh")),
        ("  Jean-Luc O'Neill :  Bonjour  ", ("Jean-Luc O'Neill", "Bonjour")),
        ("Müller: Guten Tag", ("Müller", "Guten Tag")),
        ("Grad B: ", ("Grad B", "")),
    ],
)
def test_speaker_lines(line, expected):
    assert speaker_line(line) == expected


@pytest.mark.parametrize(
    "line",
    [
        "10:30 we met the supplier",  # a time, not a speaker
        "See http://example.com/page for details",
        "Our one big and quite long list of concerns: cost",  # seven words: prose
        "- Alice: bullet point",
        "Note:no space after the colon",
        "just a sentence without a colon",
        "A" * 61 + ": name too long",
    ],
)
def test_lines_that_are_not_turns(line):
    assert speaker_line(line) is None


def test_lines_before_the_first_turn_are_a_preamble_titled_by_its_first_line():
    doc = parse_document(b"Weekly sync\n2026-11-02, room 4\n\nAlice: hi\nBob: hello\nAlice: bye\nBob: bye\n", "sync.txt")
    assert (doc.format, doc.title) == ("transcript-txt", "Weekly sync")
    assert [(t.index, t.start_char) for t in doc.turns] == [(0, 32), (1, 42), (2, 53), (3, 64)]


def test_no_turns_at_all_is_an_error():
    with pytest.raises(ParseError, match=r"^prose.txt: no 'Speaker: text' lines found$"):
        parse_transcript_txt("Just prose.\nMore prose.\n", "prose.txt")
