"""PDF, .docx and Teams .docx files through the ingest Lambda: real events, moto S3, real PostgreSQL, the local model.

A document with a text layer is stored with its chunks (offsets into the stored text, heading paths from its
headings); a scan, and a format no parser reads, are ``failed`` rows whose error says what to do.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_local.lambdas import LocalContext, load_handler_module
from tests.ingest.events import s3_notification, sqs_batch

pytestmark = pytest.mark.slow

BUCKET = "rag-documents-bucket"
PREFIX = "projects/acme/meetings/"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "parsing"


@pytest.fixture
def handler(s3, db, local_embedder):
    from rag.aws import _client

    _client.cache_clear()  # boto3 clients must be created inside mock_aws
    return load_handler_module("ingest").lambda_handler


def ingest(s3, handler, name: str, data: bytes) -> dict:
    s3.put_object(Bucket=BUCKET, Key=PREFIX + name, Body=data)
    event = sqs_batch(json.dumps(s3_notification(BUCKET, PREFIX + name)))
    return handler(event, LocalContext(function_name="ingest"))


def document(db, name: str) -> tuple:
    return db.execute(
        "SELECT id, status, kind, format, title, meeting_date::text, participants, error, body, chunk_count FROM documents WHERE object_key = %s",
        (PREFIX + name,),
    ).fetchone()


def chunks(db, document_id) -> list[tuple]:
    return db.execute(
        "SELECT content, start_char, end_char, heading_path, speakers, start_turn FROM chunks WHERE document_id = %s ORDER BY chunk_index",
        (document_id,),
    ).fetchall()


@pytest.mark.parametrize(
    ("name", "fmt", "title", "headings"),
    [
        ("2026-11-02-launch-review.pdf", "pdf", "Launch review", [["Launch review", "Decisions"], ["Launch review", "Risks"]]),
        ("2026-11-02-launch-review.docx", "docx", "Launch review", [["Launch review", "Decisions", "Battery"]]),
    ],
)
def test_a_pdf_or_docx_with_text_becomes_a_stored_document_with_chunks(s3, handler, db, name, fmt, title, headings):
    source = "notes.pdf" if fmt == "pdf" else "notes.docx"

    result = ingest(s3, handler, name, (FIXTURES / source).read_bytes())

    assert result == {"batchItemFailures": []}
    doc_id, status, kind, stored_format, stored_title, meeting_date, _, error, body, chunk_count = document(db, name)
    assert (status, kind, stored_format, stored_title, meeting_date, error) == (
        "raw_ingested", "document", fmt, title, "2026-11-02", None,
    )  # fmt: skip
    assert "rechargeable" in body.lower()
    rows = chunks(db, doc_id)
    assert len(rows) == chunk_count >= 2
    for content, start, end, *_ in rows:
        assert body[start:end] == content
    paths = [row[3] for row in rows]
    for path in headings:
        assert path in paths


def test_a_teams_docx_transcript_is_stored_with_turns_speakers_and_its_meeting(s3, handler, db):
    name = "launch-review-transcript.docx"  # no date in the name: the transcript's header has it

    assert ingest(s3, handler, name, (FIXTURES / "teams_transcript.docx").read_bytes()) == {"batchItemFailures": []}

    doc_id, status, kind, fmt, title, meeting_date, participants, error, body, _ = document(db, name)
    assert (status, kind, fmt, title, meeting_date, error) == (
        "raw_ingested",
        "transcript",
        "teams-docx",
        "Launch review",
        "2026-11-02",
        None,
    )
    assert participants == ["Maya Chen", "Jonas Weber", "Priya Raman"]
    assert body.split("\n")[0] == "Maya Chen: We need to settle the battery question today."
    rows = chunks(db, doc_id)
    assert rows[0][5] == 0 and rows[0][4][:2] == ["Maya Chen", "Jonas Weber"]


def test_a_scanned_pdf_is_a_failed_row_saying_it_needs_ocr(s3, handler, db):
    result = ingest(s3, handler, "whiteboard.pdf", (FIXTURES / "scanned.pdf").read_bytes())

    assert result == {"batchItemFailures": []}  # permanent: recorded, never retried
    _, status, *_, error, _, chunk_count = document(db, "whiteboard.pdf")
    assert (status, chunk_count) == ("failed", 0)
    assert error == (
        "whiteboard.pdf: the PDF has no text layer (its 2 pages are images, as a scan is); run OCR on it first"
        " and upload the searchable PDF or its text"
    )


def test_an_audio_file_is_a_failed_row_naming_its_format(s3, handler, db):
    result = ingest(s3, handler, "standup.mp3", b"ID3\x04\x00\x00\x00\x00\x00\x00" + bytes(1024))

    assert result == {"batchItemFailures": []}
    _, status, *_, error, _, _ = document(db, "standup.mp3")
    assert (status, error) == ("failed", "standup.mp3: an audio file (MP3); transcribe it first and upload the transcript")
