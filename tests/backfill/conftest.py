"""Fixtures of the backfill tests: documents ingested from tests/fixtures/backfill the way ingest writes them."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from uuid import UUID

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "backfill"
SCANNER_SYNC = FIXTURES / "transcripts" / "scanner_rollout_sync.txt"
BUDGET_REVIEW = FIXTURES / "transcripts" / "budget_review.txt"
RELEASE_PROCESS = FIXTURES / "documents" / "release_process.md"
MEETING_DATE = date(2026, 11, 10)  # a Tuesday


def ingest_file(
    conn,
    path: Path,
    embedder,
    *,
    project: str = "orion",
    tenant: str = "default",
    key: str | None = None,
    meeting_date: date | None = MEETING_DATE,
) -> UUID:
    """Parse, chunk, embed and write one file exactly as the ingest Lambda does (status raw_ingested)."""
    from rag.chunking import chunk_document
    from rag.parsing import parse_document
    from rag.store.documents import DocumentFields, SourceObject, replace_document

    parsed = parse_document(path.read_bytes(), path.name)
    chunks = chunk_document(parsed, embedder.count_tokens, max_tokens=min(512, embedder.max_input_tokens), overlap_tokens=50)
    source = SourceObject(
        tenant_id=tenant, project_id=project, bucket="rag-documents", key=key or f"projects/{project}/{path.name}"
    )
    fields = DocumentFields(title=path.stem, meeting_date=meeting_date)
    return replace_document(conn, source, fields, parsed, chunks, embedder.embed([c.text for c in chunks]), embedder.model_id)


@pytest.fixture
def settings(database_url):
    from rag.config import Settings

    return Settings(embedding_provider="local", llm_provider="none")
