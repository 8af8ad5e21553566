"""The transcription services' and meeting tools' formats through the real ingest handler.

Each fixture of tests/fixtures/services is put in moto S3 and delivered as an S3 notification
in an SQS batch, as Lambda's event source does; the rows in the real PostgreSQL hold its
format, speakers and turns, and every chunk is its slice of the stored body.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_local.lambdas import LocalContext, load_handler_module
from tests.ingest.events import s3_notification, sqs_batch

BUCKET = "rag-services-bucket"
SERVICES = Path(__file__).resolve().parents[1] / "fixtures" / "services"

pytestmark = pytest.mark.slow


@pytest.fixture
def handler(s3, db, local_embedder):
    from rag.aws import _client

    _client.cache_clear()  # boto3 clients must be created inside mock_aws
    return load_handler_module("ingest").lambda_handler


@pytest.mark.parametrize(
    ("fixture", "stored_as", "fmt", "participants", "turns"),
    [
        ("amazon_transcribe.json", "launch-sync.json", "amazon-transcribe", ["spk_0", "spk_1"], 3),
        ("amazon_transcribe.json", "launch-sync.txt", "amazon-transcribe", ["spk_0", "spk_1"], 3),  # content decides
        ("whisper.json", "launch-sync.json", "whisper", [], 5),
        ("whisperx.json", "launch-sync.json", "whisper", ["SPEAKER_00", "SPEAKER_01"], 3),
        ("assemblyai.json", "launch-sync.json", "assemblyai", ["Speaker A", "Speaker B"], 3),
        ("deepgram_utterances.json", "launch-sync.json", "deepgram", ["Speaker 0", "Speaker 1"], 3),
        ("deepgram_paragraphs.json", "launch-sync.json", "deepgram", ["Speaker 0", "Speaker 1"], 3),
        ("otter.txt", "launch-sync.txt", "otter", ["Sofia Ruiz", "Liam Chen", "Priya Nair"], 3),
        ("google_meet.txt", "launch-sync.txt", "google-meet", ["Liam Chen", "Priya Nair", "Sofia Ruiz"], 4),
        ("google_meet_gemini.txt", "launch-sync.txt", "google-meet", ["Sofia Ruiz", "Liam Chen", "Priya Nair"], 4),
        ("zoom_chat.txt", "meeting_saved_chat.txt", "zoom-chat", ["Sofia Ruiz", "Liam Chen", "Priya Nair"], 3),
        ("zoom_chat_cloud.txt", "chat.txt", "zoom-chat", ["Sofia Ruiz", "Liam Chen", "Priya Nair"], 3),
        ("zoom.vtt", "launch-sync.vtt", "vtt", ["Sofia Ruiz", "Liam Chen"], 3),
        ("teams.vtt", "launch-sync.vtt", "vtt", ["Sofia Ruiz", "Liam Chen"], 3),
    ],
)
def test_a_service_export_becomes_a_transcript_with_speakers_and_turns(
    s3, handler, db, fixture, stored_as, fmt, participants, turns
):
    key = f"projects/acme/meetings/2026-11-02/{stored_as}"
    s3.put_object(Bucket=BUCKET, Key=key, Body=(SERVICES / fixture).read_bytes())

    result = handler(sqs_batch(json.dumps(s3_notification(BUCKET, key))), LocalContext(function_name="ingest"))

    assert result == {"batchItemFailures": []}
    row = db.execute(
        """SELECT status, kind, format, meeting_date::text, participants, body, turns, error FROM documents"""
    ).fetchone()
    status, kind, stored_format, meeting_date, stored_participants, body, stored_turns, error = row
    assert (status, kind, stored_format, meeting_date, error) == ("raw_ingested", "transcript", fmt, "2026-11-02", None)
    assert stored_participants == participants
    assert len(stored_turns) == turns
    chunks = db.execute(
        "SELECT content, start_char, end_char, start_turn, end_turn, speakers FROM chunks ORDER BY chunk_index"
    ).fetchall()
    assert chunks and chunks[0][3] == 0 and chunks[-1][4] == turns - 1
    for content, start, end, *_ in chunks:
        assert body[start:end] == content
    assert set(participants) <= {speaker for chunk in chunks for speaker in chunk[5]}
