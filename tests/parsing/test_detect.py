"""The parser is chosen from the content; the extension only breaks ties."""

from __future__ import annotations

import pytest

from rag.errors import ParseError
from rag.parsing import detect_format, parse_document

VTT = "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\n<v Alice>Hi.</v>\n"
SRT = "1\n00:00:01,000 --> 00:00:02,000\nAlice: Hi.\n"
JSON_TURNS = '[{"speaker": "Alice", "text": "Hi."}]'
TRANSCRIPT = "Alice: We ship in March.\nBob: QA needs a week.\nAlice: Fine.\n"
KEY_VALUES = "# Status\n\nOwner: Alice\nDue: Friday\nState: open\n"


@pytest.mark.parametrize(
    ("text", "filename", "expected"),
    [
        (VTT, "captions.vtt", "vtt"),
        (VTT, "captions.txt", "vtt"),  # content wins over the extension
        ("\n" + VTT, "captions", "vtt"),
        (SRT, "captions.srt", "srt"),
        (SRT, "captions.txt", "srt"),
        ("00:00:01,000 --> 00:00:02,000\nAlice: Hi.\n", "no-counter.srt", "srt"),  # the extension breaks the tie
        ("00:00:01.000 --> 00:00:02.000\nAlice: Hi.\n", "no-header.vtt", "vtt"),
        (JSON_TURNS, "turns.json", "json"),
        (JSON_TURNS, "turns.txt", "json"),
        ('{"turns": [{"speaker": "A", "text": "x"}]}', "export", "json"),
        ('{"name": "not turns"}', "data.txt", "text"),  # JSON, but not a transcript: only .json insists
        ('{"name": "not turns"}', "data.json", "json"),  # ... and then fails with a shape error
        (TRANSCRIPT, "meeting.txt", "transcript-txt"),
        (TRANSCRIPT, "meeting.md", "transcript-txt"),
        (TRANSCRIPT, "meeting", "transcript-txt"),
        ("Alice: one speaker line only\n", "note.txt", "text"),
        (KEY_VALUES, "status.md", "markdown"),  # a .md with headings stays a document
        (KEY_VALUES, "status.txt", "transcript-txt"),  # 3 of 4 lines look like turns
        ("# Plan\n\nShip it in March.\n", "plan.txt", "markdown"),
        ("Ship it in March.\n", "plan.md", "markdown"),
        ("Ship it in March.\nThen rest.\n", "plan.txt", "text"),
    ],
)
def test_detect_format(text, filename, expected):
    assert detect_format(text, filename) == expected


def test_sixty_percent_of_lines_make_a_transcript():
    three_of_five = "Alice: a\nBob: b\nCarol: c\nprose line\nanother prose line\n"
    two_of_four = "Alice: a\nBob: b\nprose line\nanother prose line\n"
    assert detect_format(three_of_five, "x.txt") == "transcript-txt"
    assert detect_format(two_of_four, "x.txt") == "text"


def test_a_prose_txt_becomes_a_document(parse_fixture):
    memo = parse_fixture("memo.txt")  # one "Risks: ..." line looks like a turn: 1 of 5 lines
    assert (memo.kind, memo.format, memo.title, memo.turns) == ("document", "text", "Quarterly planning memo", [])
    assert [(s.heading_path, s.start_char, s.end_char) for s in memo.sections] == [((), 0, len(memo.text))]


def test_a_transcript_saved_as_md_or_without_extension_is_a_transcript(parse_fixture):
    for name in ("meeting.md", "meeting"):
        doc = parse_fixture("design_meeting.txt", name)
        assert (doc.kind, doc.format, len(doc.turns)) == ("transcript", "transcript-txt", 22)


def test_a_json_file_with_the_wrong_shape_is_an_error_not_text():
    with pytest.raises(ParseError, match=r'^data.json: expected .*; field "turns": Field required$'):
        parse_document(b'{"name": "not turns"}', "data.json")


def test_a_long_first_line_is_no_title():
    doc = parse_document(("word " * 40 + "\n\nMore.\n").encode(), "essay.txt")
    assert (doc.format, doc.title) == ("text", None)
