"""``.json`` transcripts in both shapes, and clear errors for anything else."""

from __future__ import annotations

from datetime import date

import pytest

from rag.errors import ParseError
from rag.parsing import parse_document


def test_a_list_of_turns(parse_fixture):
    doc = parse_fixture("turns_list.json")
    assert (doc.kind, doc.format, doc.title, doc.meeting_date) == ("transcript", "json", None, None)
    assert [(t.index, t.speaker, t.text, t.start_time, t.end_time) for t in doc.turns] == [
        (0, "Alice", "We ship on the first of March.", 0.0, 2.5),
        (1, "Bob", "Then QA needs the build by mid February.", 2.5, 6.0),
        (2, "Unknown", "Background noise, no speaker.", None, None),
        (3, "Alice", "", 6.0, 6.5),  # kept, so turn i is always the i-th item
        (4, "Bob", "Agreed.", 7.0, 8.0),
    ]
    assert doc.text == (
        "Alice: We ship on the first of March.\n"
        "Bob: Then QA needs the build by mid February.\n"
        "Unknown: Background noise, no speaker.\n"
        "Alice:\n"
        "Bob: Agreed."
    )
    assert [doc.text[t.start_char : t.end_char] for t in doc.turns] == doc.text.split("\n")
    assert doc.participants == ["Alice", "Bob"]


def test_an_object_with_meeting_fields(parse_fixture):
    doc = parse_fixture("turns_object.json")
    assert (doc.title, doc.meeting_date, doc.participants) == ("Pricing sync", date(2026, 10, 30), ["Alice", "Bob", "Dana"])
    assert doc.text == "Alice: Price stays at 25 euros.\nBob: Agreed."
    assert [(t.start_char, t.end_char) for t in doc.turns] == [(0, 31), (32, 44)]


def test_a_wrong_shape_names_the_items_and_fields(parse_fixture):
    with pytest.raises(ParseError) as raised:
        parse_fixture("bad_shape.json")
    assert str(raised.value) == (
        'bad_shape.json: expected a list of {"speaker", "text", "start"?, "end"?} turns or {"turns": [...]}; '
        'turns[1], field "text": Field required; '
        'turns[2], field "start": Input should be a valid number, unable to parse string as a number'
    )


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b'[{"speaker": "A", "text": "ok"}, {"speaker": "B"}]', 'item 1, field "text": Field required'),
        (b'[{"speaker": "A", "text": "ok", "end": -1}]', 'item 0, field "end": Input should be greater than or equal to 0'),
        (b'[{"speaker": 7, "text": "ok"}]', 'item 0, field "speaker": Input should be a valid string'),
        (b'{"title": "Sync"}', 'field "turns": Field required'),
        (b'{"turns": [], "meeting_date": "next week"}', 'field "meeting_date": Input should be a valid date'),
        (b'["hello"]', "item 0: Input should be a valid dictionary"),
    ],
)
def test_shape_errors(data, problem):
    with pytest.raises(ParseError) as raised:
        parse_document(data, "t.json")
    assert str(raised.value).split("; ", 1)[1].startswith(problem)


def test_many_problems_are_summarised():
    data = b"[" + b",".join([b"{}"] * 5) + b"]"
    with pytest.raises(ParseError, match=r"item 2, field \"text\": Field required \(and 2 more\)$"):
        parse_document(data, "t.json")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"turns": [', "t.json: invalid JSON at line 1 column 12: Expecting value"),
        (b"Alice: this is not JSON", "t.json: invalid JSON at line 1 column 1: Expecting value"),
        (
            b'"just a string"',
            't.json: expected a list of {"speaker", "text", "start"?, "end"?} turns or {"turns": [...]}, got a JSON str',
        ),
        (b"[]", "t.json: the transcript has no turns"),
        (b"[" * 100_000 + b"]" * 100_000, "t.json: JSON nested too deeply"),
    ],
)
def test_a_json_file_never_falls_back_to_plain_text(data, message):
    with pytest.raises(ParseError) as raised:
        parse_document(data, "t.json")
    assert str(raised.value).startswith(message)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ('{"turns": [{"speaker": "A\\u0000B", "text": "hello there"}]}', r"turns\[0\]\.speaker holds a NUL character"),
        ('[{"speaker": "Ana", "text": "fine"}, {"speaker": "Ben", "text": "bad \\u0000 byte"}]', r"\[1\]\.text holds a NUL"),
        ('{"turns": [{"speaker": "A", "text": "hi"}], "title": "Q\\u0000"}', r"title holds a NUL character"),
        ('{"turns": [{"speaker": "A", "text": "hi"}], "participants": ["x", "P\\u0000"]}', r"participants\[1\] holds a NUL"),
        ('{"turns": [{"speaker": "A", "text": "hi", "x\\u0000y": 1}]}', r'the key "x\\u0000y" of turns\[0\] holds a NUL'),
        ('{"turns": [{"speaker": "A", "text": "hi"}], "notes\\u0000": {"a": 1}}', r'the key "notes\\u0000" holds a NUL'),
        ('{"turns": [{"speaker": "A", "text": "\\ud800 hello"}]}', r"turns\[0\]\.text holds a lone surrogate \(\\ud800\)"),
        ('{"turns": [{"speaker": "A", "text": "hi"}], "\\udfff": 1}', r'the key "\\udfff" holds a lone surrogate'),
        ('{"turns": [{"speaker": "A", "text": "hi", "meta": {"deep": ["ok", "\\uDC00"]}}]}', r"meta\.deep\[1\] holds a lone"),
    ],
)
def test_text_no_database_can_store_is_refused_naming_where_it_is(data, message):
    with pytest.raises(ParseError, match=message) as raised:
        parse_document(data.encode(), "bad.json")
    error = str(raised.value)
    assert error.startswith("bad.json: ")
    assert "\x00" not in error and not any(0xD800 <= ord(c) <= 0xDFFF for c in error)  # the error itself is storable


def test_escaped_characters_that_are_text_still_parse():
    # A surrogate pair is one character; an escaped backslash before "u0000" is no NUL.
    doc = parse_document(b'[{"speaker": "Ana", "text": "ship it \\ud83d\\ude80 \\\\u0000 done"}]', "ok.json")
    assert doc.turns[0].text == "ship it \U0001f680 \\u0000 done"
