"""Where given objects stand: what ``rag ingest`` polls while it waits."""

from __future__ import annotations

from rag.parsing.model import Chunk, ParsedDocument
from rag.store import documents as repo
from rag.store.status import ObjectState, object_states

MODEL = "local/all-MiniLM-L6-v2"


def test_object_states_are_the_rows_of_the_keys_asked_for(db):
    text = "Ann: the budget is approved"
    parsed = ParsedDocument("document", "text", text)
    chunk = Chunk(index=0, text=text, start_char=0, end_char=len(text), token_count=5)
    ingested = repo.SourceObject("t", "p", "bucket", "projects/p/a.txt", version_id="v1", content_sha256="sha-a")
    repo.replace_document(db, ingested, repo.DocumentFields(), parsed, [chunk], [[1.0] + [0.0] * 383], MODEL)
    failed = repo.SourceObject("t", "p", "bucket", "projects/p/b.txt", content_sha256="sha-b")
    repo.record_failure(db, failed, repo.DocumentFields(), "binary file")
    elsewhere = repo.SourceObject("t", "p", "other-bucket", "projects/p/a.txt", content_sha256="sha-c")
    repo.record_failure(db, elsewhere, repo.DocumentFields(), "not asked for")

    states = object_states(db, "bucket", ["projects/p/a.txt", "projects/p/b.txt", "projects/p/missing.txt"])

    assert sorted(states, key=lambda s: s.object_key) == [
        ObjectState("projects/p/a.txt", "sha-a", "raw_ingested", None, "v1"),
        ObjectState("projects/p/b.txt", "sha-b", "failed", "binary file"),
    ]
    assert object_states(db, "bucket", []) == []
