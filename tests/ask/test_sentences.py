"""Sentences of an extractive quote: numbers, amounts, versions and abbreviations stay whole."""

from __future__ import annotations

import pytest

from rag.ask.sentences import sentence_spans


def sentences(text: str, start: int = 0) -> list[str]:
    return [text[s:e] for s, e in sentence_spans(text, start)]


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            "The budget is capped at $1.2 million. Finance signed it off.",
            ["The budget is capped at $1.2 million.", "Finance signed it off."],
        ),
        (
            "Errors fell to about 0.3 percent after the fix. Good news!",
            ["Errors fell to about 0.3 percent after the fix.", "Good news!"],
        ),
        ("We ship v2.1 on Friday. Then v2.2 in May.", ["We ship v2.1 on Friday.", "Then v2.2 in May."]),
        (
            "Use a short name, e.g. this one, for the bucket. Agreed.",
            ["Use a short name, e.g. this one, for the bucket.", "Agreed."],
        ),
        ("Ask Dr. Patel and J. Smith about it. They know.", ["Ask Dr. Patel and J. Smith about it.", "They know."]),
        ("Mr.Chair, the answer is 3.5%. Next question?", ["Mr.Chair, the answer is 3.5%.", "Next question?"]),
        ('She said "ship it." So we did.', ['She said "ship it."', "So we did."]),
        ("yeah , we go for plastic . and the buttons stay", ["yeah , we go for plastic . and the buttons stay"]),
        ("Really?! Yes... I think so", ["Really?!", "Yes...", "I think so"]),
    ],
)
def test_numbers_versions_and_abbreviations_stay_in_their_sentence(text, expected):
    assert sentences(text) == expected


def test_spans_are_offsets_into_the_text_from_where_asked():
    line = "Tom: Then we decided: cutover stays on Thursday.  Finance agreed at 9.30 a.m. today."

    spans = sentence_spans(line, 5)

    assert [line[s:e] for s, e in spans] == ["Then we decided: cutover stays on Thursday.", "Finance agreed at 9.30 a.m. today."]
    assert spans[0][0] == 5


def test_blank_text_has_no_sentence():
    assert sentence_spans("   ") == []
    assert sentence_spans("") == []
