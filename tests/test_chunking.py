"""Chunk boundaries and offsets, with the local model's real WordPiece tokenizer."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.chunking import chunk_document
from rag.config import Settings
from rag.embedding.local import LocalEmbedder
from rag.parsing import parse_document

MAX = LocalEmbedder.max_input_tokens  # 254: the model reads 256 word pieces with [CLS] and [SEP]
count = LocalEmbedder(Settings()).count_tokens  # tokenizer only: torch is not loaded


def transcript(turns: list[tuple[str, str]]):
    return parse_document("\n".join(f"{s}: {t}" for s, t in turns).encode(), "meeting.txt")


def check_invariants(doc, chunks, max_tokens):
    assert [c.index for c in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert doc.text[chunk.start_char : chunk.end_char] == chunk.text
        assert chunk.token_count == count(chunk.text) <= max_tokens
    if doc.turns:
        covered = set()
        for chunk in chunks:
            covered.update(range(chunk.start_turn, chunk.end_turn + 1))
        assert covered == {t.index for t in doc.turns}


def test_turns_are_packed_whole_with_overlap_of_trailing_turns():
    # each turn is "Sn: w w w ... " with a known token count
    doc = transcript([(f"S{i % 2}", " ".join(["budget"] * 8)) for i in range(10)])
    per_turn = count(doc.text[doc.turns[0].start_char : doc.turns[0].end_char])
    chunks = chunk_document(doc, count, max_tokens=per_turn * 4, overlap_tokens=per_turn)
    assert [(c.start_turn, c.end_turn) for c in chunks] == [(0, 3), (3, 6), (6, 9)]
    assert chunks[0].speakers == ("S0", "S1")
    check_invariants(doc, chunks, per_turn * 4)


def test_no_overlap_when_the_last_turn_exceeds_the_overlap_budget():
    doc = transcript([("A", "one two three four five six")] * 6)
    per_turn = count(doc.text[doc.turns[0].start_char : doc.turns[0].end_char])
    chunks = chunk_document(doc, count, max_tokens=per_turn * 3, overlap_tokens=per_turn - 1)
    assert [(c.start_turn, c.end_turn) for c in chunks] == [(0, 2), (3, 5)]


def test_only_a_turn_longer_than_a_chunk_is_split():
    long_turn = " ".join(f"Sentence number {i} explains the supplier contract in detail." for i in range(80))
    doc = transcript([("A", "Short opening."), ("B", long_turn), ("C", "Short closing.")])
    chunks = chunk_document(doc, count, max_tokens=MAX, overlap_tokens=50)
    middle = [c for c in chunks if c.start_turn == c.end_turn == 1]
    assert len(middle) >= 3  # the long turn alone, in pieces
    assert all(c.text.endswith(".") for c in middle[:-1])  # cut at sentence ends
    assert chunks[0].start_turn == 0 and chunks[-1].end_turn == 2
    check_invariants(doc, chunks, MAX)


def test_a_word_longer_than_a_chunk_is_cut_by_characters():
    doc = transcript([("A", "x" * 5000), ("B", "fine")])
    chunks = chunk_document(doc, count, max_tokens=64, overlap_tokens=8)
    check_invariants(doc, chunks, 64)


def test_markdown_chunks_never_straddle_a_heading_and_carry_their_path():
    text = "# Guide\n\nIntro paragraph.\n\n## Setup\n\n" + "\n\n".join(f"Step {i}: install part {i}." for i in range(40))
    text += "\n\n## Usage\n\nPress the red button."
    doc = parse_document(text.encode(), "guide.md")
    chunks = chunk_document(doc, count, max_tokens=60, overlap_tokens=10)
    by_path = {}
    for c in chunks:
        by_path.setdefault(c.heading_path, []).append(c)
        assert c.text.count("## ") <= 1 and ("## " not in c.text or c.text.startswith("## "))
    assert set(by_path) == {("Guide",), ("Guide", "Setup"), ("Guide", "Usage")}
    assert by_path[("Guide", "Usage")][0].text == "## Usage\n\nPress the red button."
    assert len(by_path[("Guide", "Setup")]) > 1
    check_invariants(doc, chunks, 60)


def test_no_chunk_exceeds_the_model_limit_on_a_long_realistic_transcript():
    words = "we agreed that the rechargeable battery pack ships in march unless the supplier slips again".split()
    turns = [(f"Speaker {i % 4}", " ".join(words[: 3 + (i * 7) % len(words)]) * (1 + i % 3)) for i in range(300)]
    doc = transcript(turns)
    chunks = chunk_document(doc, count, max_tokens=MAX, overlap_tokens=50)
    check_invariants(doc, chunks, MAX)
    assert max(c.token_count for c in chunks) > MAX * 0.8  # chunks are actually filled


speaker = st.sampled_from(["Alice", "Bob", "Project Manager", "Dr. Smith (Finance)"])
utterance = st.lists(st.sampled_from(["ok", "battery", "supplier.", "we", "decided", "March!", "costs", "café", "x" * 30]), min_size=1, max_size=60).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(turns=st.lists(st.tuples(speaker, utterance), min_size=1, max_size=40), max_tokens=st.integers(8, 120), overlap=st.integers(0, 40))
def test_invariants_hold_for_any_transcript(turns, max_tokens, overlap):
    doc = transcript(turns)
    chunks = chunk_document(doc, count, max_tokens=max_tokens, overlap_tokens=overlap)
    check_invariants(doc, chunks, max_tokens)
    starts = [c.start_char for c in chunks]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)  # always progresses


def test_max_tokens_must_be_positive():
    with pytest.raises(ValueError, match="max_tokens >= 1"):
        chunk_document(transcript([("A", "hi")]), count, max_tokens=0, overlap_tokens=0)
