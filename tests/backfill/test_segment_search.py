"""Segments are found by what was said in them, in every mode (sql/0007, the embed stage's mean vector)."""

from __future__ import annotations

import numpy as np
import pytest

from rag.backfill.stages import run_named_stage
from rag.search.engine import SearchScope, search_type
from rag.search.types import SEARCHABLE_TYPES
from tests.backfill.conftest import BUDGET_REVIEW, SCANNER_SYNC, ingest_file

pytestmark = pytest.mark.slow

# Words said inside one segment, away from its start: (query, document, the turn that says them).
SAID_IN_A_SEGMENT = [
    ("spares in the office by Friday", SCANNER_SYNC, 9),  # the scanner topic, turns 0-11
    ("retail buyers big screen", SCANNER_SYNC, 16),  # the trade show topic, turns 12-23
    ("one percent sample by Thursday", BUDGET_REVIEW, 11),  # spot instances and savings, turns 6-11
    ("contractor for the ingestion pipeline permanent role", BUDGET_REVIEW, 21),  # the hiring topic, from turn 12
]


@pytest.fixture(scope="module")
def segmented(database_url, local_embedder):
    """Both example meetings ingested, segmented and embedded once for the module: path -> document id."""
    from rag.config import Settings
    from rag.store.connection import connect

    settings = Settings(embedding_provider="local", llm_provider="none")
    with connect(database_url) as conn:
        conn.execute("TRUNCATE documents CASCADE")
        documents = {path: ingest_file(conn, path, local_embedder) for path in (SCANNER_SYNC, BUDGET_REVIEW)}
        for stage in ("segment", "embed"):
            run_named_stage(conn, settings, stage, 10, embedder=local_embedder)
        yield documents
        conn.execute("TRUNCATE documents CASCADE")


@pytest.fixture
def conn(segmented, database_url):
    from rag.store.connection import connect

    with connect(database_url) as connection:
        yield connection


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
@pytest.mark.parametrize(("query", "path", "turn"), SAID_IN_A_SEGMENT)
def test_a_segment_is_found_first_by_words_said_anywhere_in_it(conn, local_embedder, segmented, mode, query, path, turn):
    hits = search_type(
        conn, SEARCHABLE_TYPES["segment"], SearchScope("default", ("orion",)), mode=mode, query=query,
        query_vector=None if mode == "keyword" else local_embedder.embed([query])[0],
        model_id=local_embedder.model_id, dimension=local_embedder.dimension, top_k=5,
    )  # fmt: skip

    assert hits, f"{mode} search found no segment for {query!r}"
    assert hits[0].document_id == str(segmented[path])
    assert hits[0].start_turn <= turn <= hits[0].end_turn


def test_the_query_words_are_neither_in_the_title_nor_in_the_summary(conn):
    # What the test above proves: the segments are not found through their title or summary.
    shown = " ".join(f"{t} {s}" for t, s in conn.execute("SELECT title, summary FROM segments").fetchall()).lower()
    for word in ("spares", "retail", "sample", "contractor", "ingestion"):
        assert word not in shown


def test_a_segment_vector_stands_for_its_own_text(conn, local_embedder):
    rows = conn.execute(
        """SELECT s.document_id, s.embedding, s.embedding_model, substr(d.body, s.start_char + 1, s.end_char - s.start_char)
           FROM segments s JOIN documents d ON d.id = s.document_id ORDER BY s.document_id, s.segment_index"""
    ).fetchall()
    own = local_embedder.embed([text for *_, text in rows])

    assert len(rows) == 5 and {model for _, _, model, _ in rows} == {local_embedder.model_id}
    for i, (document, vector, _, text) in enumerate(rows):
        v = np.asarray(vector.to_list())
        assert np.linalg.norm(v) == pytest.approx(1.0, abs=1e-5)
        similarities = {j: float(v @ np.asarray(own[j])) for j, row in enumerate(rows) if row[0] == document}
        assert max(similarities, key=similarities.get) == i  # closest to its own words, not its neighbours'
        if local_embedder.count_tokens(text) <= local_embedder.max_input_tokens:
            assert similarities[i] == pytest.approx(1.0, abs=1e-4)  # one piece: exactly its text's vector


def test_a_segment_too_long_for_a_tsvector_is_indexed_from_its_first_half_million_characters(db):
    # GIVEN three megabytes of distinct words: a tsvector of all of them exceeds PostgreSQL's 1 MB
    words = " ".join(f"w{i:06d}" for i in range(400_000))
    import psycopg

    with pytest.raises(psycopg.errors.ProgramLimitExceeded), db.transaction():
        db.execute("SELECT to_tsvector('english', %s)", (words,))

    # WHEN the segment's tsvector is made THEN it holds the words of its first 500,000 characters
    found = db.execute(
        "SELECT segment_search_tsv('Title', 'Summary', %s) @@ 'w000001'::tsquery,"
        " segment_search_tsv('Title', 'Summary', %s) @@ 'w399999'::tsquery",
        (words, words),
    ).fetchone()
    assert found == (True, False)
