"""A meeting's date, title and participants from its sidecar (``<file>.meta.json``) or S3 metadata.

Through the real ingest handler (SQS batches of real S3 notifications), moto S3 (versioned, as the
CDK bucket is), the real PostgreSQL and the local model.
"""

from __future__ import annotations

import json
from datetime import date
from email.header import Header

import pytest

from rag.errors import ParseError
from rag.events import ObjectChange
from rag.ingest import Ingestor
from rag.meeting_metadata import MeetingMetadata, described_key, from_object_metadata, from_sidecar, is_sidecar
from rag_local.lambdas import LocalContext, load_handler_module
from tests.ingest.events import s3_notification, sqs_batch
from tests.ingest.s3_hooks import S3WithHook

BUCKET = "rag-meta-bucket"
KEY = "tenants/globex/projects/apollo/meetings/weekly sync.txt"  # no date in the name
SIDECAR = KEY + ".meta.json"
TRANSCRIPT = b"Dana Kim: We ship the beta on Friday.\nRavi: I will write the release notes.\nDana Kim: Agreed."


# --- the schema --------------------------------------------------------------------------------


def test_a_sidecar_gives_date_title_and_participants():
    stated = from_sidecar(
        b'{"meeting_date": "2026-03-04", "title": " Weekly sync ", "participants": ["Dana Kim", "Ravi"]}', SIDECAR
    )
    assert stated == MeetingMetadata(meeting_date=date(2026, 3, 4), title="Weekly sync", participants=["Dana Kim", "Ravi"])
    assert from_sidecar(b"{}", SIDECAR) == MeetingMetadata()
    assert from_sidecar(b'{"meeting_date": "2026-03-04T15:30:00Z"}', SIDECAR).meeting_date == date(2026, 3, 4)


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (
            b'{"meeting_date": "04/03/2026"}',
            "sidecar weekly sync.txt.meta.json: meeting_date '04/03/2026' is not an ISO 8601 date",
        ),
        (b'{"meeting_date": "2026-02-30"}', "meeting_date '2026-02-30' is not an ISO 8601 date"),
        (b'{"meeting_date": 20260304}', "meeting_date 20260304 is not an ISO 8601 date"),
        (b'{"date": "2026-03-04"}', "unknown field 'date' (expected meeting_date, title, participants)"),
        (b'{"tenant": "acme"}', "unknown field 'tenant'"),
        (b'{"participants": "Dana Kim, Ravi"}', "participants must be a list of names"),
        (b'{"participants": ["Dana Kim", ""]}', "participants.1: String should have at least 1 character"),
        (b'{"title": ""}', "title: String should have at least 1 character"),
        (b'["2026-03-04"]', "must be a JSON object like"),
        (b'{"meeting_date": "2026-03-04",}', "sidecar weekly sync.txt.meta.json is not valid JSON"),
        (b"\xff\xfe{}", "is not UTF-8 text"),
    ],
)
def test_a_sidecar_that_does_not_fit_the_schema_is_a_clear_error(data, error):
    with pytest.raises(ParseError) as raised:
        from_sidecar(data, SIDECAR)
    assert error in str(raised.value)


def test_s3_metadata_gives_the_same_fields_and_its_errors_name_the_header():
    encoded_title = Header("Réunion café", "utf-8").encode()  # S3 keeps non-ASCII values RFC 2047-encoded
    stated = from_object_metadata({"meeting-date": "2026-03-04", "title": encoded_title, "participants": "Dana Kim, Ravi ,"})
    assert stated == MeetingMetadata(meeting_date=date(2026, 3, 4), title="Réunion café", participants=["Dana Kim", "Ravi"])
    assert from_object_metadata({"tenant": "acme", "project": "other"}) == MeetingMetadata()
    with pytest.raises(ParseError, match=r"S3 metadata: meeting-date 'next week' is not an ISO 8601 date"):
        from_object_metadata({"meeting-date": "next week"})


def test_the_sidecar_wins_field_by_field():
    sidecar = MeetingMetadata(meeting_date=date(2026, 3, 4))
    metadata = MeetingMetadata(meeting_date=date(2026, 1, 1), title="From metadata")
    assert sidecar.over(metadata) == MeetingMetadata(meeting_date=date(2026, 3, 4), title="From metadata")


def test_sidecar_keys():
    assert is_sidecar(SIDECAR) and described_key(SIDECAR) == KEY
    assert not is_sidecar(KEY)
    assert not is_sidecar("projects/apollo/.meta.json")  # describes nothing


# --- through the handler -----------------------------------------------------------------------

pytest_slow = pytest.mark.slow


@pytest.fixture
def handler(s3, db, local_embedder):
    from rag.aws import _client

    _client.cache_clear()  # boto3 clients must be created inside mock_aws
    return load_handler_module("ingest").lambda_handler


def deliver(handler, *keys: str, removed: bool = False) -> dict:
    bodies = [json.dumps(s3_notification(BUCKET, key, removed=removed)) for key in keys]
    return handler(sqs_batch(*bodies), LocalContext(function_name="ingest"))


def documents(db) -> list[tuple]:
    return db.execute(
        "SELECT object_key, status, title, meeting_date, participants, error FROM documents ORDER BY object_key"
    ).fetchall()


def put_sidecar(s3, value: dict | bytes, key: str = SIDECAR) -> None:
    s3.put_object(Bucket=BUCKET, Key=key, Body=value if isinstance(value, bytes) else json.dumps(value).encode())


@pytest_slow
def test_a_sidecar_beside_the_transcript_dates_it_and_is_never_a_document(s3, handler, db):
    put_sidecar(s3, {"meeting_date": "2026-03-04", "title": "Beta launch sync", "participants": ["Dana Kim", "Ravi", "Lee"]})
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=TRANSCRIPT)

    assert deliver(handler, SIDECAR, KEY) == {"batchItemFailures": []}

    assert documents(db) == [(KEY, "raw_ingested", "Beta launch sync", date(2026, 3, 4), ["Dana Kim", "Ravi", "Lee"], None)]
    assert db.execute("SELECT DISTINCT tenant_id, project_id FROM chunks").fetchall() == [("globex", "apollo")]


@pytest_slow
def test_without_a_sidecar_the_file_name_and_content_give_the_fields_as_before(s3, handler, db):
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=TRANSCRIPT)
    deliver(handler, KEY)
    assert documents(db) == [(KEY, "raw_ingested", "weekly sync", None, ["Dana Kim", "Ravi"], None)]


@pytest_slow
def test_the_sidecar_wins_over_s3_metadata_which_wins_over_the_key(s3, handler, db):
    key = "projects/apollo/2026-01-05-planning.txt"
    s3.put_object(
        Bucket=BUCKET, Key=key, Body=TRANSCRIPT,
        Metadata={"meeting-date": "2026-01-06", "title": "Planning (metadata)", "participants": "Dana Kim, Ravi, Lee"},
    )  # fmt: skip
    deliver(handler, key)
    assert documents(db) == [(key, "raw_ingested", "Planning (metadata)", date(2026, 1, 6), ["Dana Kim", "Ravi", "Lee"], None)]

    put_sidecar(s3, {"meeting_date": "2026-01-07"}, key + ".meta.json")
    deliver(handler, key + ".meta.json")

    # The sidecar's date; the metadata's title and participants (the sidecar gives none)
    assert documents(db) == [(key, "raw_ingested", "Planning (metadata)", date(2026, 1, 7), ["Dana Kim", "Ravi", "Lee"], None)]


@pytest_slow
def test_a_bad_sidecar_fails_its_meeting_with_an_error_naming_it_and_a_fixed_one_ingests_it(s3, handler, db):
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=TRANSCRIPT)
    put_sidecar(s3, {"date": "2026-03-04", "title": "Beta launch sync"})

    assert deliver(handler, KEY, SIDECAR) == {"batchItemFailures": []}  # a permanent error: not retried

    [(key, status, title, _, _, error)] = documents(db)
    assert (key, status, title) == (KEY, "failed", "weekly sync")
    assert error == ("sidecar weekly sync.txt.meta.json: unknown field 'date' (expected meeting_date, title, participants)")
    assert db.execute("SELECT count(*) FROM chunks").fetchone() == (0,)

    put_sidecar(s3, {"meeting_date": "2026-03-04", "title": "Beta launch sync"})
    deliver(handler, SIDECAR)

    assert documents(db) == [(KEY, "raw_ingested", "Beta launch sync", date(2026, 3, 4), ["Dana Kim", "Ravi"], None)]
    assert db.execute("SELECT count(*) FROM chunks").fetchone()[0] >= 1


@pytest_slow
def test_bad_s3_metadata_fails_its_meeting_with_an_error_naming_the_header(s3, handler, db):
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=TRANSCRIPT, Metadata={"meeting-date": "March 4"})
    deliver(handler, KEY)
    assert documents(db) == [
        (KEY, "failed", "weekly sync", None, [], "S3 metadata: meeting-date 'March 4' is not an ISO 8601 date (YYYY-MM-DD)")
    ]


@pytest_slow
def test_a_changed_sidecar_re_ingests_its_meeting_and_a_removed_one_falls_back(s3, handler, db):
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=TRANSCRIPT)
    put_sidecar(s3, {"meeting_date": "2026-03-04"})
    deliver(handler, KEY)
    (document_id,) = db.execute("SELECT id FROM documents").fetchone()
    # The backfill had processed it: a re-ingest puts it back at the start, so it is redone with the new date.
    db.execute("UPDATE documents SET status = 'extracted' WHERE id = %s", (document_id,))

    put_sidecar(s3, {"meeting_date": "2026-03-11", "participants": ["Dana Kim", "Ravi", "Lee"]})
    deliver(handler, SIDECAR)

    assert db.execute("SELECT id, status, meeting_date, participants FROM documents").fetchall() == [
        (document_id, "raw_ingested", date(2026, 3, 11), ["Dana Kim", "Ravi", "Lee"])
    ]

    s3.delete_object(Bucket=BUCKET, Key=SIDECAR)
    deliver(handler, SIDECAR, removed=True)

    assert documents(db) == [(KEY, "raw_ingested", "weekly sync", None, ["Dana Kim", "Ravi"], None)]


@pytest_slow
def test_the_same_sidecar_delivered_again_rewrites_nothing(s3, handler, db):
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=TRANSCRIPT)
    put_sidecar(s3, {"meeting_date": "2026-03-04"})
    deliver(handler, KEY)
    chunks = db.execute("SELECT id FROM chunks ORDER BY chunk_index").fetchall()
    db.execute("UPDATE documents SET status = 'extracted'")

    deliver(handler, SIDECAR, KEY)

    assert db.execute("SELECT status FROM documents").fetchall() == [("extracted",)]
    assert db.execute("SELECT id FROM chunks ORDER BY chunk_index").fetchall() == chunks


@pytest_slow
def test_a_sidecar_that_arrives_before_its_transcript_waits_for_it(s3, handler, db):
    put_sidecar(s3, {"meeting_date": "2026-03-04"})
    deliver(handler, SIDECAR)
    assert documents(db) == []

    s3.put_object(Bucket=BUCKET, Key=KEY, Body=TRANSCRIPT)
    deliver(handler, KEY)
    assert [row[:4] for row in documents(db)] == [(KEY, "raw_ingested", "weekly sync", date(2026, 3, 4))]


@pytest_slow
def test_a_write_made_from_an_older_sidecar_stands_aside_for_the_newer_one(s3, db, local_embedder):
    from rag.config import get_settings
    from rag.store.connection import connection

    settings = get_settings()
    ingestor = Ingestor(lambda: connection(settings), S3WithHook(s3), local_embedder, settings)
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=TRANSCRIPT)
    put_sidecar(s3, {"meeting_date": "2026-03-04"})
    results = {}

    def newer_sidecar_lands() -> None:  # after the transcript's event read the sidecar of the 4th
        put_sidecar(s3, {"meeting_date": "2026-03-11"})
        results["sidecar"] = ingestor.apply(ObjectChange("created", BUCKET, SIDECAR))

    ingestor.s3.after_get = lambda: setattr(ingestor.s3, "after_get", newer_sidecar_lands)  # the second read

    results["transcript"] = ingestor.apply(ObjectChange("created", BUCKET, KEY))

    assert (results["sidecar"].outcome, results["transcript"].outcome) == ("ingested", "superseded")
    assert db.execute("SELECT meeting_date FROM documents").fetchall() == [(date(2026, 3, 11),)]


@pytest_slow
def test_a_sidecar_of_a_sidecar_is_rejected_and_the_sidecar_is_never_ingested_as_a_document(s3, handler, db):
    put_sidecar(s3, {"meeting_date": "2026-03-04"})
    put_sidecar(s3, {"meeting_date": "2026-03-05"}, SIDECAR + ".meta.json")
    assert deliver(handler, SIDECAR + ".meta.json") == {"batchItemFailures": []}
    assert documents(db) == []


@pytest_slow
def test_a_sidecar_too_large_to_be_one_is_refused_unread(s3, handler, db):
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=TRANSCRIPT)
    put_sidecar(s3, b'{"title": "' + b"x" * 70_000 + b'"}')
    deliver(handler, KEY)
    [(_, status, _, _, _, error)] = documents(db)
    assert (status, error) == ("failed", "sidecar weekly sync.txt.meta.json is 70013 bytes; a sidecar holds at most 65536 bytes")
