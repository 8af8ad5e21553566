"""Transcript markers stay out of every index: embedding text, token counts, tsvectors, postings."""

from __future__ import annotations

import pytest

from rag.index_text import index_text

SAMPLES = [
    "Um {disfmarker} the battery {vocalsound} lasts a week {gap} or so.",
    "[laughter] We ship in March (crosstalk) if the supplier agrees [Inaudible].",
    "See section [1] (the appendix) for {Comment} the budget.",
    "{vocalsound} {disfmarker}",
    "No markers at all in this sentence.",
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Um {disfmarker} the battery {vocalsound} lasts", "Um the battery lasts"),
        ("[laughter] ship (crosstalk) it [Inaudible].", " ship it ."),
        ("[coughs] budget (laughs)", " budget "),
        # Brackets around anything else are content: citations, asides, links.
        ("See [1] (the appendix) and [the deck](http://x)", "See [1] (the appendix) and [the deck](http://x)"),
        ("plain text", "plain text"),
    ],
)
def test_markers_are_removed_and_other_brackets_kept(text: str, expected: str):
    assert index_text(text) == expected


def test_the_sql_function_indexes_exactly_what_python_embeds(db):
    for text in SAMPLES:
        sql, python = db.execute(
            "SELECT to_tsvector('english', index_text(%s))::text, to_tsvector('english', %s)::text",
            (text, index_text(text)),
        ).fetchone()
        assert sql == python, text
    lexemes = db.execute("SELECT tsvector_to_array(to_tsvector('english', index_text(%s)))", (SAMPLES[0],)).fetchone()[0]
    assert sorted(lexemes) == ["batteri", "last", "um", "week"]


def write_chunk(db, text: str) -> None:
    from rag.parsing.model import Chunk, ParsedDocument
    from rag.store import documents as repo

    source = repo.SourceObject("t", "p", "b", "a.txt", content_sha256=text)
    chunk = Chunk(index=0, text=text, start_char=0, end_char=len(text), token_count=5)
    parsed = ParsedDocument("document", "text", text)
    repo.replace_document(db, source, repo.DocumentFields(), parsed, [chunk], [[1.0] + [0.0] * 383], "local/all-MiniLM-L6-v2")


def test_chunk_tsvectors_and_postings_have_no_marker_terms(db):
    write_chunk(db, "The budget {disfmarker} the budget {vocalsound} [laughter] supplier")
    terms = db.execute("SELECT tsvector_to_array(search_tsv) FROM chunks").fetchone()[0]
    assert set(terms) == {"budget", "supplier"}
    assert db.execute("SELECT len FROM chunk_lexemes").fetchall() == [(3,)]  # the chunk's length counts its words only
    tsv = db.execute("SELECT search_tsv::text FROM chunks").fetchone()[0]
    assert "disfmark" not in tsv and "vocalsound" not in tsv and "laughter" not in tsv


def test_embedder_reads_the_text_without_markers(local_embedder):
    marked, clean = local_embedder.embed(["so {disfmarker} the battery {vocalsound} lasts", "so the battery lasts"])
    assert marked == clean
    assert local_embedder.count_tokens("so {disfmarker} the battery {vocalsound} lasts") == local_embedder.count_tokens(
        "so the battery lasts"
    )
    # Nothing but markers: the provider still gets a non-empty text (it keeps the markers).
    only_markers = local_embedder.embed(["{vocalsound} {disfmarker}"])[0]
    assert len(only_markers) == 384 and any(only_markers)
