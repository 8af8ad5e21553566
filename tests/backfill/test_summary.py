"""The offline segment summary: the segment's most central sentences, in spoken order."""

from __future__ import annotations

from rag.backfill.text import central_sentences

TURNS = [
    "Morning everyone.",
    "The scanner firmware on the warehouse scanners drops the wifi at the loading docks.",
    "Okay, good.",
    "I had a sandwich for lunch and it was honestly quite a nice one today.",
    "We flash the new scanner firmware before the warehouse scanners go live. Then the wifi holds.",
    "The warehouse wifi at the docks needs two more access points for the scanners.",
]


def test_the_sentences_sharing_the_segments_topic_words_are_chosen_in_spoken_order():
    chosen = central_sentences(TURNS, limit=200)

    texts = [s.text for _, s in chosen]
    assert [i for i, _ in chosen] == sorted(i for i, _ in chosen)
    assert "I had a sandwich for lunch and it was honestly quite a nice one today." not in texts
    assert "Okay, good." not in texts and "Morning everyone." not in texts  # under six words
    assert texts[0] == "The scanner firmware on the warehouse scanners drops the wifi at the loading docks."
    assert sum(len(t) + 1 for t in texts) <= 200


def test_the_limit_keeps_the_most_central_sentence_only():
    chosen = central_sentences(TURNS, limit=90)

    assert [(i, s.text) for i, s in chosen] == [
        (1, "The scanner firmware on the warehouse scanners drops the wifi at the loading docks.")
    ]


def test_offsets_point_into_the_turn_and_a_segment_of_short_turns_still_gets_a_sentence():
    chosen = central_sentences(["Yes.", "Sure, fine by me."], limit=400)

    assert [(i, s.text) for i, s in chosen] == [(1, "Sure, fine by me.")]
    index, sentence = central_sentences(TURNS, limit=400)[-1]
    assert TURNS[index][sentence.start : sentence.end] == sentence.text
    assert central_sentences([], limit=400) == [] and central_sentences(["", " "], limit=400) == []
