"""PDF and .docx files through the deployed ingest function, run from the layer alone on CPython 3.12.

pypdf, python-docx and lxml (a compiled wheel) must import from the layer when such a file arrives, and
not before: the function's init loads none of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.artifact.harness import Invocation, Stack, create_schema, receive_all, sqs_event

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "parsing"
PREFIX = "tenants/acme/projects/remote/"
UPLOADS = {
    f"{PREFIX}2026-11-02-launch-review.pdf": (FIXTURES / "notes.pdf").read_bytes(),
    f"{PREFIX}2026-11-02-launch-review.docx": (FIXTURES / "notes.docx").read_bytes(),
    f"{PREFIX}launch-review-transcript.docx": (FIXTURES / "teams_transcript.docx").read_bytes(),
    f"{PREFIX}whiteboard-scan.pdf": (FIXTURES / "scanned.pdf").read_bytes(),
}
DOCUMENT_LIBRARIES = {"pypdf", "docx", "lxml"}


@pytest.fixture(scope="module")
def ingested(stack: Stack) -> tuple[Invocation, dict[str, Any], list[tuple[Any, ...]]]:
    create_schema(stack)
    services = stack.services
    s3 = services.client("s3")
    for key, data in UPLOADS.items():
        s3.put_object(Bucket=services.bucket, Key=key, Body=data)
    # S3 sends a test event when the notification is configured, then one notification per object.
    event = sqs_event(receive_all(services, len(UPLOADS) + 1), services.queue_arn)
    with stack.function("ingest", label="ingest-documents") as function:
        init = function.init
        result = function.invoke(event, modules=True)
    rows = services.database.execute(
        "SELECT object_key, status, kind, format, title, meeting_date::text, error, chunk_count FROM documents ORDER BY object_key"
    )
    return result, init, rows


def test_pdf_and_docx_files_are_ingested_from_the_layer(
    ingested: tuple[Invocation, dict[str, Any], list[tuple[Any, ...]]],
) -> None:
    result, _, rows = ingested
    assert result.value() == {"batchItemFailures": []}
    by_key = {row[0].removeprefix(PREFIX): row[1:] for row in rows}
    assert {key: row[:6] for key, row in by_key.items()} == {
        "2026-11-02-launch-review.docx": ("raw_ingested", "document", "docx", "Launch review", "2026-11-02", None),
        "2026-11-02-launch-review.pdf": ("raw_ingested", "document", "pdf", "Launch review", "2026-11-02", None),
        "launch-review-transcript.docx": ("raw_ingested", "transcript", "teams-docx", "Launch review", "2026-11-02", None),
        "whiteboard-scan.pdf": (
            "failed", None, None, "whiteboard-scan", None,
            "whiteboard-scan.pdf: the PDF has no text layer (its 2 pages are images, as a scan is); run OCR on it first"
            " and upload the searchable PDF or its text",
        ),
    }  # fmt: skip
    assert all(row[6] > 0 for key, row in by_key.items() if row[0] == "raw_ingested")


def test_the_document_libraries_load_only_when_such_a_file_arrives(
    ingested: tuple[Invocation, dict[str, Any], list[tuple[Any, ...]]],
) -> None:
    result, init, _ = ingested
    assert init["present"] == []  # nothing but the layer, the asset and the runtime's boto3 on the path
    assert not DOCUMENT_LIBRARIES & {name.split(".")[0] for name in init["modules"]}
    assert DOCUMENT_LIBRARIES <= {name.split(".")[0] for name in result.modules}
    assert "lxml.etree" in result.modules  # the compiled extension, built for CPython 3.12 on manylinux
