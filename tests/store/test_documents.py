"""The write path on precomputed vectors: one transaction per document, binary COPY."""

from __future__ import annotations

import math
import random

import psycopg
import pytest

from rag.parsing.model import Chunk, ParsedDocument, Turn
from rag.search.engine import SearchScope, search_chunks
from rag.store import documents as repo

MODEL = "local/all-MiniLM-L6-v2"


def unit(seed: int, dim: int = 384) -> list[float]:
    rng = random.Random(seed)
    values = [rng.gauss(0, 1) for _ in range(dim)]
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


def transcript(n_turns: int) -> tuple[ParsedDocument, list[Chunk]]:
    lines = [f"Speaker {i % 3}: line number {i} about topic {i // 4}" for i in range(n_turns)]
    text = "\n".join(lines)
    turns, offset = [], 0
    for i, line in enumerate(lines):
        turns.append(Turn(i, f"Speaker {i % 3}", line.split(": ", 1)[1], offset, offset + len(line)))
        offset += len(line) + 1
    chunks = [
        Chunk(
            index=j,
            text=text[turns[a].start_char : turns[b].end_char],
            start_char=turns[a].start_char,
            end_char=turns[b].end_char,
            token_count=10,
            start_turn=a,
            end_turn=b,
            speakers=("Speaker 0", "Speaker 1"),
        )
        for j, (a, b) in enumerate((k, min(k + 3, n_turns - 1)) for k in range(0, n_turns, 4))
    ]
    return ParsedDocument(kind="transcript", format="transcript-txt", text=text, turns=turns), chunks


def source(key: str = "projects/p1/m.txt", tenant: str = "t1") -> repo.SourceObject:
    return repo.SourceObject(tenant_id=tenant, project_id="p1", bucket="b", key=key, content_sha256="abc")


def test_replace_writes_document_and_chunks_that_slice_back(db):
    parsed, chunks = transcript(12)
    document_id = repo.replace_document(
        db, source(), repo.DocumentFields(title="M"), parsed, chunks, [unit(i) for i in range(len(chunks))], MODEL
    )
    stored = db.execute(
        "SELECT d.body, c.content, c.start_char, c.end_char, c.start_turn, c.end_turn, c.speakers, c.embedding_model "
        "FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.id = %s ORDER BY c.chunk_index",
        (document_id,),
    ).fetchall()
    assert len(stored) == 3
    for body, content, start, end, *_ in stored:
        assert body[start:end] == content
    assert [(r[4], r[5]) for r in stored] == [(0, 3), (4, 7), (8, 11)]
    assert stored[0][6] == ["Speaker 0", "Speaker 1"] and stored[0][7] == MODEL


def test_a_failing_write_leaves_the_previous_version_untouched(db):
    parsed, chunks = transcript(8)
    document_id = repo.replace_document(db, source(), repo.DocumentFields(), parsed, chunks, [unit(1), unit(2)], MODEL)
    before = db.execute("SELECT id, content FROM chunks ORDER BY id").fetchall()

    bad = [Chunk(**{**chunks[0].__dict__, "start_char": -5})]  # violates the offsets CHECK mid-COPY
    with pytest.raises(psycopg.errors.CheckViolation):
        repo.replace_document(db, source(), repo.DocumentFields(), parsed, bad, [unit(3)], MODEL)

    assert db.execute("SELECT id, content FROM chunks ORDER BY id").fetchall() == before
    assert db.execute("SELECT chunk_count FROM documents WHERE id = %s", (document_id,)).fetchone() == (2,)


def test_vector_count_must_match_chunks(db):
    parsed, chunks = transcript(8)
    with pytest.raises(ValueError, match="one vector per chunk"):
        repo.replace_document(db, source(), repo.DocumentFields(), parsed, chunks, [unit(1)], MODEL)


def test_search_never_crosses_tenants_or_models(db):
    parsed, chunks = transcript(4)
    vector = unit(7)
    repo.replace_document(db, source("projects/p1/a.txt", "t1"), repo.DocumentFields(), parsed, chunks, [vector], MODEL)
    repo.replace_document(db, source("projects/p1/b.txt", "t2"), repo.DocumentFields(), parsed, chunks, [vector], MODEL)
    repo.replace_document(db, source("projects/p1/c.txt", "t1"), repo.DocumentFields(), parsed, chunks, [vector], "other/model")

    hits = search_chunks(
        db, SearchScope("t1", ("p1",)), mode="semantic", query="q", query_vector=vector, model_id=MODEL, dimension=384, top_k=10
    )

    assert [h.source_uri for h in hits] == ["s3://b/projects/p1/a.txt"]
    assert hits[0].similarity == pytest.approx(1.0, abs=1e-5)


def test_new_content_drops_the_old_backfill_and_starts_it_again(db):
    parsed, chunks = transcript(12)
    document_id = repo.replace_document(
        db, source(), repo.DocumentFields(), parsed, chunks, [unit(i) for i in range(len(chunks))], MODEL
    )
    segment_id = db.execute(
        """INSERT INTO segments (document_id, tenant_id, project_id, segment_index, title, summary, start_char, end_char, method)
           VALUES (%s, 't1', 'p1', 0, 'Old topic', 'Old summary', 0, 10, 'texttiling') RETURNING id""",
        (document_id,),
    ).fetchone()[0]
    db.execute(
        """INSERT INTO decisions (document_id, segment_id, tenant_id, project_id, start_char, end_char, description, method)
           VALUES (%s, %s, 't1', 'p1', 0, 10, 'Old decision', 'rules')""",
        (document_id, segment_id),
    )
    db.execute("UPDATE documents SET status = 'extracted', backfill_error = 'earlier failure', backfill_attempts = 2")

    changed, changed_chunks = transcript(8)
    again = repo.replace_document(
        db, source(), repo.DocumentFields(), changed, changed_chunks, [unit(i) for i in range(len(changed_chunks))], MODEL
    )

    assert again == document_id
    assert db.execute("SELECT count(*) FROM segments").fetchone() == (0,)
    assert db.execute("SELECT count(*) FROM decisions").fetchone() == (0,)
    assert db.execute("SELECT status, backfill_error, backfill_attempts FROM documents").fetchone() == ("raw_ingested", None, 0)


def test_a_failure_is_recorded_whatever_its_error_and_fields_hold(db):
    # An error quoting the file (a NUL, a lone surrogate, pages of it), fields taken from the same file.
    error = "bad value 'A\x00B' and '\ud800' " + "x" * 20_000
    fields = repo.DocumentFields(title="Q\x00 review", participants=["A\x00B", "\udfff", "Ben"])

    document_id = repo.record_failure(db, source(), fields, error)

    status, stored_error, title, participants = db.execute(
        "SELECT status, error, title, participants FROM documents WHERE id = %s", (document_id,)
    ).fetchone()
    assert status == "failed"
    assert stored_error.startswith("bad value 'A\\u0000B' and '\\ud800' xxx")
    assert len(stored_error) == repo.MAX_ERROR_CHARS and stored_error.endswith("…")
    assert (title, participants) == ("Q\\u0000 review", ["A\\u0000B", "\\udfff", "Ben"])
