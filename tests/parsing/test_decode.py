"""Bytes -> text: UTF-8 only, with errors that name the file, the problem and the fix."""

from __future__ import annotations

import pytest

from rag.errors import ParseError
from rag.parsing.decode import decode_text


def test_bom_is_stripped_and_crlf_and_cr_become_lf():
    assert decode_text(b"\xef\xbb\xbfAlice: hi\r\nBob: yo\rCarol: ok\r\n", "a.txt") == "Alice: hi\nBob: yo\nCarol: ok\n"


def test_the_bom_fixture_is_parsed_as_a_two_turn_transcript(parse_fixture):
    doc = parse_fixture("bom_crlf.txt")
    assert doc.text == "Alice: hi there\nBob: hello\n"
    assert [(t.speaker, t.text, t.start_char, t.end_char) for t in doc.turns] == [
        ("Alice", "hi there", 0, 15),
        ("Bob", "hello", 16, 26),
    ]


def test_tabs_form_feeds_and_a_stray_escape_are_still_text():
    text = "Agenda\tNotes\f\nA \x1b[1mbold\x1b[0m word in a long enough line of ordinary prose to dilute it."
    assert decode_text(text.encode(), "notes.txt") == text


def test_latin1_names_the_byte_and_the_fix(fixture_bytes):
    with pytest.raises(ParseError) as raised:
        decode_text(fixture_bytes("latin1.txt"), "latin1.txt")
    assert str(raised.value) == (
        "latin1.txt: not valid UTF-8 at byte 10: b'\\xe9 au' (invalid continuation byte), "
        "it looks like Windows-1252 / Latin-1; re-save the file as UTF-8"
    )


def test_the_reported_offset_counts_the_bom():
    with pytest.raises(ParseError, match=r"^x.txt: not valid UTF-8 at byte 5: "):
        decode_text(b"\xef\xbb\xbfab\xe9cd", "x.txt")


def test_nul_bytes_mean_binary(fixture_bytes):
    with pytest.raises(ParseError) as raised:
        decode_text(fixture_bytes("image.txt"), "image.txt")
    assert str(raised.value) == "image.txt: binary file: NUL byte at byte 8; expected UTF-8 text"


def test_many_control_bytes_mean_binary_even_without_nul():
    data = bytes(range(1, 32)) * 4 + b"some text"
    with pytest.raises(ParseError, match=r"^blob: binary file: 108 control bytes in the first 133; expected UTF-8 text$"):
        decode_text(data, "blob")


def test_utf16_is_refused_with_the_fix():
    with pytest.raises(ParseError, match=r"^notes.txt: UTF-16 text \(byte order mark found\); re-save the file as UTF-8$"):
        decode_text("Alice: hi".encode("utf-16"), "notes.txt")


@pytest.mark.parametrize("data", [b"", b"   \n\r\n\t", b"\xef\xbb\xbf", b"\xef\xbb\xbf \n"])
def test_empty_or_blank_files_fail(data):
    with pytest.raises(ParseError, match=r"^empty.txt: empty file$"):
        decode_text(data, "empty.txt")
