"""Each parser on realistic samples, with exact values."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from rag.errors import ParseError
from rag.parsing import parse_document

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "parsing"


def parse(name: str, as_name: str | None = None):
    return parse_document((FIXTURES / name).read_bytes(), as_name or name)


def assert_turn_offsets(doc):
    for turn in doc.turns:
        line = doc.text[turn.start_char : turn.end_char]
        assert line.startswith(turn.speaker) and turn.text.split()[0] in line


def test_txt_transcript_turns_speakers_and_continuations():
    doc = parse("design_meeting.txt")
    assert (doc.kind, doc.format, doc.title) == ("transcript", "transcript-txt", "Remote control redesign, kickoff meeting")
    assert len(doc.turns) == 10
    assert [t.index for t in doc.turns] == list(range(10))
    assert doc.turns[0].speaker == "Project Manager"
    assert doc.turns[4].text == (
        "For findability, a locator chime triggered from the TV would work. It would add about forty cents per unit."
    )
    assert doc.text[doc.turns[4].start_char : doc.turns[4].end_char].endswith("forty cents per unit.")
    assert doc.turns[9].speaker == "Dr. Smith (Finance)"
    assert doc.participants == ["Project Manager", "Industrial Designer", "User Interface", "Marketing", "Dr. Smith (Finance)"]
    assert doc.text == (FIXTURES / "design_meeting.txt").read_text()
    assert_turn_offsets(doc)


def test_vtt_voice_tags_times_and_skipped_blocks():
    doc = parse("standup.vtt")
    assert (doc.kind, doc.format) == ("transcript", "vtt")
    assert [(t.speaker, t.text, t.start_time, t.end_time) for t in doc.turns] == [
        ("Alice", "Morning everyone, quick stand-up.", 1.0, 4.5),
        ("Bob", "The supplier confirmed the delivery date.", 4.5, 9.25),
        ("Carol", "I finished the drawings.", 69.25, 72.0),
    ]
    assert doc.text.split("\n")[1] == "Bob: The supplier confirmed the delivery date."
    assert_turn_offsets(doc)


def test_srt_with_and_without_speakers():
    doc = parse("review.srt")
    assert doc.format == "srt"
    assert [(t.speaker, t.start_time) for t in doc.turns] == [("Alice", 0.0), ("Bob", 3.2), ("Unknown", 3723.004)]
    assert doc.participants == ["Alice", "Bob"]


def test_json_list_and_object_shapes():
    listed = parse("turns_list.json")
    assert (listed.kind, listed.format) == ("transcript", "json")
    assert [(t.speaker, t.end_time) for t in listed.turns] == [("Alice", 2.5), ("Bob", 6.0), ("Unknown", None)]
    assert listed.text.split("\n")[0] == "Alice: We ship on the first of March."
    obj = parse("turns_object.json")
    assert (obj.title, obj.meeting_date, obj.participants) == ("Pricing sync", date(2026, 10, 30), ["Alice", "Bob", "Dana"])


def test_json_with_a_wrong_shape_fails_clearly():
    with pytest.raises(ParseError, match=r"bad_shape.json: .*turns.0.text: Field required"):
        parse("bad_shape.json")
    with pytest.raises(ParseError, match="invalid JSON at line 1"):
        parse_document(b'{"turns": [', "broken.json")


def test_markdown_sections_and_heading_paths_ignore_code_fences():
    doc = parse("handbook.md")
    assert (doc.kind, doc.format, doc.title) == ("document", "markdown", "Team handbook")
    assert [s.heading_path for s in doc.sections] == [
        (),
        ("Team handbook",),
        ("Team handbook", "Meetings"),
        ("Team handbook", "Meetings", "Notes"),
        ("Team handbook", "Decisions"),
    ]
    notes = doc.sections[3]
    assert "# this is a comment" in doc.text[notes.start_char : notes.end_char]
    assert doc.text[doc.sections[4].start_char :].startswith("## Decisions")


def test_prose_txt_is_a_document_and_a_transcript_md_is_a_transcript():
    memo = parse("memo.txt")
    assert (memo.kind, memo.format, memo.title) == ("document", "text", "Quarterly planning memo")
    assert len(memo.sections) == 1
    as_md = parse("design_meeting.txt", "meeting.md")
    assert (as_md.kind, len(as_md.turns)) == ("transcript", 10)


def test_bom_and_crlf_are_normalised():
    doc = parse("bom_crlf.txt")
    assert doc.text == "Alice: hi there\nBob: hello\n"
    assert [t.text for t in doc.turns] == ["hi there", "hello"]


@pytest.mark.parametrize(
    ("name", "message"),
    [("latin1.txt", r"not valid UTF-8 at byte 10 .*re-save the file as UTF-8"), ("image.txt", "binary file")],
)
def test_non_utf8_and_binary_input_fail_with_a_clear_error(name, message):
    with pytest.raises(ParseError, match=message):
        parse(name)


def test_empty_file_fails():
    with pytest.raises(ParseError, match="empty file"):
        parse_document(b"  \n\n", "empty.txt")
