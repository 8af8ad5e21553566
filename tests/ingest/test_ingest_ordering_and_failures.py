"""The ingest under races and bad content: the newest version wins, permanent errors are ``failed`` rows.

Real PostgreSQL, moto S3 (versioned, as the CDK bucket is), the real local model.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from rag.events import ObjectChange
from rag.ingest import Ingestor
from tests.ingest.s3_hooks import S3WithHook

pytestmark = pytest.mark.slow

BUCKET = "rag-order-bucket"
KEY = "tenants/acme/projects/ops/2026-11-20-standup.txt"
V1 = b"Ana: Version one says the cutover is on Monday.\nBen: Monday works."
V2 = b"Ana: Version two moves the cutover to Friday.\nBen: Friday then."


@pytest.fixture
def ingestor(s3, db, local_embedder) -> Ingestor:
    from rag.config import get_settings
    from rag.store.connection import connection

    settings = get_settings()
    return Ingestor(lambda: connection(settings), S3WithHook(s3), local_embedder, settings)


def stored(db) -> list[tuple[str, str]]:
    return db.execute(
        "SELECT d.s3_version_id, c.content FROM documents d JOIN chunks c ON c.document_id = d.id ORDER BY c.chunk_index"
    ).fetchall()


def test_an_older_version_read_before_a_newer_one_never_overwrites_it(s3, ingestor, db):
    # GIVEN invocation 1 read v1, and while it embeds, v2 is uploaded and invocation 2 ingests it
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=V1)
    results = {}

    def newer_version_lands() -> None:
        s3.put_object(Bucket=BUCKET, Key=KEY, Body=V2)
        results["second"] = ingestor.apply(ObjectChange("created", BUCKET, KEY))

    ingestor.s3.after_get = newer_version_lands

    # WHEN invocation 1 gets to write
    results["first"] = ingestor.apply(ObjectChange("created", BUCKET, KEY))

    # THEN it stands aside and the database holds v2, S3's latest
    assert (results["second"].outcome, results["first"].outcome) == ("ingested", "superseded")
    latest = s3.head_object(Bucket=BUCKET, Key=KEY)["VersionId"]
    assert stored(db) == [(latest, V2.decode())]


def test_a_creation_read_before_a_delete_does_not_bring_the_document_back(s3, ingestor, db):
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=V1)
    ingestor.apply(ObjectChange("created", BUCKET, KEY))

    def deleted_meanwhile() -> None:
        s3.delete_object(Bucket=BUCKET, Key=KEY)  # a delete marker: HEAD says 404
        assert ingestor.apply(ObjectChange("removed", BUCKET, KEY)).outcome == "deleted"

    ingestor.s3.after_get = deleted_meanwhile
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=V2)

    result = ingestor.apply(ObjectChange("created", BUCKET, KEY))

    assert result.outcome == "superseded"
    assert db.execute("SELECT count(*) FROM documents").fetchone() == (0,)


def test_a_version_brought_back_by_a_deletion_never_overwrites_a_newer_upload(s3, ingestor, db):
    # GIVEN v2 was ingested, then deleted: S3 serves v1 again, and the removal re-ingests it...
    v1 = s3.put_object(Bucket=BUCKET, Key=KEY, Body=V1)["VersionId"]
    v2 = s3.put_object(Bucket=BUCKET, Key=KEY, Body=V2)["VersionId"]
    assert ingestor.apply(ObjectChange("created", BUCKET, KEY)).outcome == "ingested"
    s3.delete_object(Bucket=BUCKET, Key=KEY, VersionId=v2)
    results = {}
    v3_body = b"Ana: Version three settles on Thursday.\nBen: Thursday it is."

    def newer_upload_lands() -> None:
        # ...but while it embeds v1, v3 is uploaded and its creation event ingests it
        s3.put_object(Bucket=BUCKET, Key=KEY, Body=v3_body)
        results["creation"] = ingestor.apply(ObjectChange("created", BUCKET, KEY))

    ingestor.s3.after_get = newer_upload_lands

    results["removal"] = ingestor.apply(ObjectChange("removed", BUCKET, KEY, version_id=v2))

    # THEN the removal stands aside and the database holds v3, S3's latest
    assert (results["creation"].outcome, results["removal"].outcome) == ("ingested", "superseded")
    latest = s3.head_object(Bucket=BUCKET, Key=KEY)["VersionId"]
    assert latest != v1 and stored(db) == [(latest, v3_body.decode())]


def test_racing_invocations_on_one_key_end_at_the_latest_version(s3, ingestor, db):
    # Five invocations (the event source's parallelism) each handle one upload of the same key.
    bodies = [f"Ana: Revision {i} of the plan, with item {i}.\nBen: Noted {i}.".encode() for i in range(5)]
    start = threading.Barrier(len(bodies))
    outcomes: list[str] = []

    def invocation(body: bytes) -> None:
        start.wait()
        s3.put_object(Bucket=BUCKET, Key=KEY, Body=body)
        outcomes.append(ingestor.apply(ObjectChange("created", BUCKET, KEY)).outcome)

    threads = [threading.Thread(target=invocation, args=(body,)) for body in bodies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert len(outcomes) == len(bodies)
    assert set(outcomes) <= {"ingested", "unchanged", "superseded"}
    latest = s3.get_object(Bucket=BUCKET, Key=KEY)
    assert stored(db) == [(latest["VersionId"], latest["Body"].read().decode())]


@pytest.mark.parametrize(
    ("content", "expected_error"),
    [
        # A NUL inside a turn: PostgreSQL text cannot hold it.
        (json.dumps([{"speaker": "Ana", "text": "bad \u0000 byte"}, {"speaker": "Ben", "text": "fine"}]), "NUL"),
        # JSON's non-standard Infinity: Python parses it, jsonb refuses it.
        ('[{"speaker": "Ana", "text": "starts", "start": Infinity, "end": Infinity}]', "refused"),
    ],
)
def test_content_the_database_refuses_is_a_failed_document_with_a_readable_error(s3, ingestor, db, content, expected_error):
    key = "projects/ops/bad.json"
    s3.put_object(Bucket=BUCKET, Key=key, Body=content.encode())

    result = ingestor.apply(ObjectChange("created", BUCKET, key))  # returns: nothing to retry

    assert result.outcome == "failed"
    status, error = db.execute("SELECT status, error FROM documents WHERE object_key = %s", (key,)).fetchone()
    assert status == "failed" and expected_error.lower() in error.lower()
    assert db.execute("SELECT count(*) FROM chunks").fetchone() == (0,)


def test_a_file_over_the_limit_is_refused_from_its_size_without_being_read(s3, ingestor, db, monkeypatch):
    monkeypatch.setattr(ingestor, "settings", ingestor.settings.with_values(max_object_bytes=1000))
    key = "projects/ops/huge.txt"
    s3.put_object(Bucket=BUCKET, Key=key, Body=b"Ana: " + b"x" * 5000)
    reads = []
    real_get = ingestor.s3._client.get_object

    def counting_get(**kwargs: Any) -> dict[str, Any]:
        response = real_get(**kwargs)
        body = response["Body"]
        original_read = body.read
        body.read = lambda *a: reads.append(1) or original_read(*a)
        return response

    monkeypatch.setattr(ingestor.s3._client, "get_object", counting_get)

    result = ingestor.apply(ObjectChange("created", BUCKET, key))

    assert result.outcome == "failed" and "5005 bytes; the limit is 1000" in result.error
    assert reads == []
    assert db.execute("SELECT status FROM documents WHERE object_key = %s", (key,)).fetchone() == ("failed",)


@pytest.mark.parametrize("content", [V1, b"\x89PNG\r\n\x1a\n\x00\x00"], ids=["transcript", "unparseable"])
def test_a_stored_document_of_another_tenant_is_never_taken_over(s3, ingestor, db, content):
    # A row written before tenants came from keys, under another tenant than the key now says.
    key = "projects/ops/legacy.txt"
    db.execute(
        "INSERT INTO documents (tenant_id, project_id, bucket, object_key, status) VALUES ('globex', 'ops', %s, %s, 'failed')",
        (BUCKET, key),
    )
    s3.put_object(Bucket=BUCKET, Key=key, Body=content)

    result = ingestor.apply(ObjectChange("created", BUCKET, key))

    assert result.outcome == "rejected" and "another tenant" in result.error
    assert db.execute("SELECT tenant_id FROM documents WHERE object_key = %s", (key,)).fetchall() == [("globex",)]
    assert db.execute("SELECT count(*) FROM chunks").fetchone() == (0,)


@pytest.mark.parametrize(
    ("content", "expected_error"),
    [
        ('{"turns": [{"speaker": "A\\u0000B", "text": "hello there"}]}', "turns[0].speaker holds a NUL character"),
        ('{"turns": [{"speaker": "A", "text": "hello there", "x\\u0000y": 1}]}', 'the key "x\\u0000y" of turns[0] holds a NUL'),
        ('{"turns": [{"speaker": "A", "text": "\\ud800 hello there"}]}', "turns[0].text holds a lone surrogate (\\ud800)"),
    ],
)
def test_text_no_database_can_store_ends_as_a_failed_document_through_the_queue(s3, db, local_embedder, content, expected_error):
    from rag.aws import _client
    from rag_local.lambdas import LocalContext, load_handler_module
    from tests.ingest.events import s3_notification, sqs_batch

    _client.cache_clear()  # boto3 clients must be created inside mock_aws
    key = "projects/ops/hostile.json"
    s3.put_object(Bucket=BUCKET, Key=key, Body=content.encode())

    result = load_handler_module("ingest").lambda_handler(
        sqs_batch(json.dumps(s3_notification(BUCKET, key))), LocalContext(function_name="ingest")
    )

    assert result == {"batchItemFailures": []}  # nothing to retry, nothing for the DLQ
    status, error = db.execute("SELECT status, error FROM documents WHERE object_key = %s", (key,)).fetchone()
    assert status == "failed" and error.startswith(f"hostile.json: {expected_error}")


@pytest.mark.parametrize(
    ("speaker", "title", "stored", "expected_error"),
    [
        ("A\x00B", "Standup", ("Standup", ["A\\u0000B"]), "NUL (0x00)"),
        ("Ana", "T\ud800", ("T\\ud800", ["Ana"]), "it holds a lone surrogate (\\ud800): half of a UTF-16 pair"),
    ],
)
def test_unstorable_text_a_parser_lets_through_still_ends_as_a_failed_document(
    s3, ingestor, db, monkeypatch, speaker, title, stored, expected_error
):
    import rag.parsing
    from rag.parsing.model import ParsedDocument, Turn

    # GIVEN a parser that passes on text no database can store
    def careless_parser(data: bytes, filename: str) -> ParsedDocument:
        text = f"{speaker}: hello there"
        return ParsedDocument("transcript", "json", text, [Turn(0, speaker, "hello there", 0, len(text))], title=title)

    monkeypatch.setattr(rag.parsing, "parse_document", careless_parser)
    key = "projects/ops/careless.json"
    s3.put_object(Bucket=BUCKET, Key=key, Body=b"{}")

    # WHEN the write refuses it
    result = ingestor.apply(ObjectChange("created", BUCKET, key))

    # THEN the file is a failed document (not a retry) whose error says what was refused
    assert result.outcome == "failed"
    status, error, *fields = db.execute(
        "SELECT status, error, title, participants FROM documents WHERE object_key = %s", (key,)
    ).fetchone()
    assert status == "failed" and expected_error in error
    assert tuple(fields) == stored
