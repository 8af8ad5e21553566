"""WebVTT and SRT captions -> ``Speaker: text`` turns with times in seconds."""

from __future__ import annotations

import pytest

from rag.errors import ParseError
from rag.parsing import parse_document
from rag.parsing.subtitles import seconds
from rag.parsing.turns import MERGE_MAX_CHARS


def turns_of(doc):
    return [(t.speaker, t.text, t.start_time, t.end_time) for t in doc.turns]


def assert_rendered(doc):
    """The text is one ``Speaker: text`` line per turn, and each turn slices back to its line."""
    assert doc.text.split("\n") == [f"{t.speaker}: {t.text}" for t in doc.turns]
    assert [doc.text[t.start_char : t.end_char] for t in doc.turns] == doc.text.split("\n")


def test_vtt_voice_tags_merges_times_and_skipped_blocks(parse_fixture):
    doc = parse_fixture("standup.vtt")
    assert (doc.kind, doc.format, doc.title) == ("transcript", "vtt", None)
    assert turns_of(doc) == [
        # two consecutive Alice cues merged into one turn spanning both
        ("Alice", "Morning everyone, quick stand-up. Bob, you first.", 1.0, 6.0),
        # <v.loud Bob>, <b> and &amp; cleaned, two caption lines joined
        ("Bob", "The supplier confirmed the delivery date & the price.", 6.0, 9.25),
        ("Carol", "I finished the drawings.", 69.25, 72.0),
        # two voices in one cue: two turns with the cue's times
        ("Alice", "Thanks.", 3600.0, 3603.5),
        ("Bob", "Bye.", 3600.0, 3603.5),
        ("Unknown", "(door closes)", 3604.0, 3605.0),
    ]
    assert doc.participants == ["Alice", "Bob", "Carol"]
    assert "NOTE" not in doc.text and "cue" not in doc.text and "intro-1" not in doc.text
    assert [(t.start_char, t.end_char) for t in doc.turns[:2]] == [(0, 56), (57, 115)]
    assert_rendered(doc)


def test_srt_with_and_without_speakers(parse_fixture):
    doc = parse_fixture("review.srt")
    assert (doc.kind, doc.format) == ("transcript", "srt")
    assert turns_of(doc) == [
        ("Alice", "Let us review the budget.", 0.0, 3.2),
        ("Bob", "We are two hundred dollars over.", 3.2, 7.9),
        ("Unknown", "Mostly the travel line.", 7.9, 10.0),
        ("Unknown", "We should cut the travel line.", 3723.004, 3725.0),  # "Unknown" cues are never merged
    ]
    assert doc.participants == ["Alice", "Bob"]
    assert doc.text.split("\n")[2] == "Unknown: Mostly the travel line."
    assert_rendered(doc)


def test_srt_cues_without_blank_lines_between_them():
    data = b"1\n00:00:01,000 --> 00:00:02,000\nAlice: one\n2\n00:00:02,000 --> 00:00:03,500\nBob: two\n"
    doc = parse_document(data, "tight.srt")
    assert turns_of(doc) == [("Alice", "one", 1.0, 2.0), ("Bob", "two", 2.0, 3.5)]


def test_labelled_lines_inside_one_cue_are_separate_turns():
    data = b"WEBVTT\n\n00:05.000 --> 00:07.250\nAlice: Ready?\nBob: Yes,\nlet's go.\n"
    doc = parse_document(data, "call.vtt")
    assert turns_of(doc) == [("Alice", "Ready?", 5.0, 7.25), ("Bob", "Yes, let's go.", 5.0, 7.25)]


def test_merging_stops_before_a_turn_gets_too_long():
    sentence = "We keep talking about the same battery supplier contract."  # 57 characters
    cues = "".join(f"00:00:{i:02d}.000 --> 00:00:{i + 1:02d}.000\n<v Dana>{sentence}</v>\n\n" for i in range(40))
    doc = parse_document(f"WEBVTT\n\n{cues}".encode(), "long.vtt")
    assert all(len(t.text) < MERGE_MAX_CHARS for t in doc.turns)
    assert [t.text.count(sentence) for t in doc.turns] == [17, 17, 6]
    assert [(t.start_time, t.end_time) for t in doc.turns] == [(0.0, 17.0), (17.0, 34.0), (34.0, 40.0)]


@pytest.mark.parametrize(
    ("stamp", "value"),
    [("00:00:01.000", 1.0), ("01:02:03,004", 3723.004), ("02:03.5", 123.5), ("00:10", 10.0), ("100:00:00.000", 360000.0)],
)
def test_timestamps_in_seconds(stamp, value):
    assert seconds(stamp) == value


def test_captions_without_any_cue_text_fail():
    with pytest.raises(ParseError, match=r"^empty.vtt: no caption cues with text found$"):
        parse_document(b"WEBVTT\n\nNOTE nothing was said\n\n00:00:01.000 --> 00:00:02.000\n<v Alice></v>\n", "empty.vtt")
