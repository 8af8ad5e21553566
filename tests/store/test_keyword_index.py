"""Postings and per-project statistics stay exact through insert, replace and delete."""

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
    rows = db.execute(
        """SELECT tenant_id, project_id, count(DISTINCT chunk_id), sum(tf) FROM chunk_terms GROUP BY 1, 2"""
    ).fetchall()
    return {(t, p): (n, total) for t, p, n, total in rows}


def test_stats_follow_insert_replace_and_delete(db):
    db.execute("TRUNCATE keyword_stats")
    write(db, "a", ["The batteries were charged", "Budget budget budget", "and the of"])  # last: stop words only
    write(db, "b", ["Supplier delivery in March"], project="q")
    assert stats(db) == recomputed(db) == {("t", "p"): (2, 5), ("t", "q"): (1, 3)}
    tf = db.execute("SELECT tf, chunk_len FROM chunk_terms WHERE term = 'budget'").fetchall()
    assert tf == [(3, 3)]

    write(db, "a", ["Budget cut"])
    assert stats(db)[("t", "p")] == recomputed(db)[("t", "p")] == (1, 2)

    repo.delete_by_key(db, "b", "b")
    assert stats(db)[("t", "q")] == (0, 0)
    assert db.execute("SELECT count(*) FROM chunk_terms WHERE project_id = 'q'").fetchone() == (0,)
