"""BM25 bookkeeping (chunk lengths, per-project statistics) stays exact through insert, replace and delete."""

from __future__ import annotations

from rag.parsing.model import Chunk, ParsedDocument
from rag.store import documents as repo

MODEL = "local/all-MiniLM-L6-v2"


def write(db, key: str, texts: list[str], project: str = "p") -> None:
    body = "\n".join(texts)
    chunks, offset = [], 0
    for i, text in enumerate(texts):
        chunks.append(Chunk(index=i, text=text, start_char=offset, end_char=offset + len(text), token_count=5))
        offset += len(text) + 1
    source = repo.SourceObject("t", project, "b", key, content_sha256=body)
    repo.replace_document(
        db,
        source,
        repo.DocumentFields(),
        ParsedDocument("document", "text", body),
        chunks,
        [[1.0] + [0.0] * 383] * len(chunks),
        MODEL,
    )


def stats(db) -> dict:
    return {
        (t, p): (n, total)
        for t, p, n, total in db.execute("SELECT tenant_id, project_id, chunk_count, total_len FROM keyword_stats")
    }


def recomputed(db) -> dict:
    """The statistics counted afresh from the chunks' tsvectors."""
    rows = db.execute(
        """SELECT c.tenant_id, c.project_id, count(DISTINCT c.id), sum(cardinality(t.positions))
           FROM chunks c CROSS JOIN LATERAL unnest(c.search_tsv) t GROUP BY 1, 2"""
    ).fetchall()
    return {(t, p): (n, total) for t, p, n, total in rows}


def lengths(db) -> dict[int, int]:
    return dict(db.execute("SELECT chunk_id, len FROM chunk_lexemes").fetchall())


def expected_lengths(db) -> dict[int, int]:
    rows = db.execute(
        "SELECT c.id, sum(cardinality(t.positions)) FROM chunks c CROSS JOIN LATERAL unnest(c.search_tsv) t GROUP BY 1"
    ).fetchall()
    return dict(rows)


def test_stats_follow_insert_replace_and_delete(db):
    db.execute("TRUNCATE keyword_stats")
    write(db, "a", ["The batteries were charged", "Budget budget budget", "and the of"])  # last: stop words only
    write(db, "b", ["Supplier delivery in March"], project="q")
    assert stats(db) == recomputed(db) == {("t", "p"): (2, 5), ("t", "q"): (1, 3)}
    budget = db.execute("SELECT id FROM chunks WHERE content = 'Budget budget budget'").fetchone()[0]
    assert lengths(db)[budget] == 3
    assert lengths(db) == expected_lengths(db)  # the stop-words-only chunk has no length row

    write(db, "a", ["Budget cut"])
    assert stats(db)[("t", "p")] == recomputed(db)[("t", "p")] == (1, 2)

    repo.delete_by_key(db, "b", "b")
    assert stats(db)[("t", "q")] == (0, 0)


def test_replace_and_delete_leave_no_orphan_lexeme_rows(db):
    write(db, "a", ["Budget cut in March", "Supplier delivery"])
    write(db, "b", ["Battery charger"], project="q")
    write(db, "a", ["Budget approved", "Supplier late", "Logo"])  # replaced: new chunk ids
    assert lengths(db) == expected_lengths(db)
    repo.delete_by_key(db, "b", "a")
    repo.record_failure(db, repo.SourceObject("t", "q", "b", "b"), repo.DocumentFields(), "unparseable")  # its chunks go
    assert db.execute("SELECT count(*) FROM chunks").fetchone() == (0,)
    assert lengths(db) == {}
    assert db.execute(
        "SELECT count(*) FROM chunk_lexemes l LEFT JOIN chunks c ON c.id = l.chunk_id WHERE c.id IS NULL"
    ).fetchone() == (0,)
