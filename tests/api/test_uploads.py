"""POST /v1/uploads through the real handler, the URL PUT to a real moto server: the object lands at exactly the key
under the caller's verified tenant; the body cannot name another tenant; names, sizes and a missing bucket refused."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
import requests

from rag_local.moto_server import MotoServer
from tests.api.conftest import call

BUCKET = "upload-documents"


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """A moto server the API presigns for (RAG_UPLOAD_BUCKET), and a client of it to look at what landed."""
    from moto.moto_api._internal.models import moto_api_backend

    from rag.aws import _client
    from rag.config import get_settings

    server = MotoServer(0)
    server.start()
    endpoint = f"http://127.0.0.1:{server.port}"
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    monkeypatch.setenv("RAG_UPLOAD_BUCKET", BUCKET)
    get_settings.cache_clear()
    _client.cache_clear()
    client = boto3.client("s3", region_name="us-east-1", endpoint_url=endpoint)
    client.create_bucket(Bucket=BUCKET)
    try:
        yield client
    finally:
        _client.cache_clear()
        server.stop()
        moto_api_backend.reset()


def keys(s3) -> list[str]:
    return [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])]


def test_the_presigned_put_stores_the_file_under_the_callers_tenant(s3):
    data = b"WEBVTT\n\n00:00:01.000 --> 00:00:04.000\n<v Maya>We ship in March.\n"
    status, ticket = call("POST", "/v1/uploads", {"project_id": "remote", "filename": "notes.vtt", "size": len(data)})
    assert status == 201
    assert ticket["key"] == "tenants/acme/projects/remote/notes.vtt"
    assert (ticket["method"], ticket["expires_in"], ticket["headers"]) == ("PUT", 900, {"Content-Type": "text/vtt"})
    assert ticket["url"].startswith(f"{s3.meta.endpoint_url}/{BUCKET}/tenants/acme/projects/remote/notes.vtt?")
    assert "X-Amz-Signature=" in ticket["url"] and "X-Amz-Expires=900" in ticket["url"]
    put = requests.put(ticket["url"], data=data, headers=ticket["headers"], timeout=30)
    assert put.status_code == 200, put.text
    assert keys(s3) == ["tenants/acme/projects/remote/notes.vtt"]
    stored = s3.get_object(Bucket=BUCKET, Key=ticket["key"])
    assert stored["Body"].read() == data and stored["ContentType"] == "text/vtt"


def test_a_given_content_type_is_signed_and_a_name_with_spaces_is_kept(s3):
    body = {"project_id": "remote", "filename": "Weekly sync 3.txt", "content_type": "text/plain; charset=utf-8"}
    status, ticket = call("POST", "/v1/uploads", body)
    assert status == 201 and ticket["key"] == "tenants/acme/projects/remote/Weekly sync 3.txt"
    assert ticket["headers"] == {"Content-Type": "text/plain; charset=utf-8"}
    assert requests.put(ticket["url"], data=b"Maya: hi", headers=ticket["headers"], timeout=30).status_code == 200
    assert keys(s3) == ["tenants/acme/projects/remote/Weekly sync 3.txt"]
    assert call("POST", "/v1/uploads", {"project_id": "remote", "filename": "x.unknownext"})[1]["headers"] == {
        "Content-Type": "application/octet-stream"
    }


@pytest.mark.parametrize(
    "body",
    [
        {"project_id": "remote", "filename": "notes.vtt", "tenant": "globex"},
        {"project_id": "remote", "filename": "notes.vtt", "tenant_id": "globex"},
        {"project_id": "../../tenants/globex/projects/remote", "filename": "notes.vtt"},
        {"project_id": "remote", "filename": "../../../globex/projects/remote/notes.vtt"},
    ],
)
def test_the_body_cannot_choose_another_tenant(s3, body):
    status, answer = call("POST", "/v1/uploads", body)
    assert status == 422 and answer["error"]["code"] == "validation_error"
    assert keys(s3) == []
    # The same caller's own upload still lands under its tenant, whatever other tenant exists.
    status, ticket = call("POST", "/v1/uploads", {"project_id": "remote", "filename": "notes.vtt"}, tenant="globex")
    assert status == 201 and ticket["key"].startswith("tenants/globex/projects/remote/")


@pytest.mark.parametrize(
    ("filename", "why"),
    [
        ("notes/evil.vtt", "filename"),
        ("notes\\evil.vtt", "filename"),
        (".hidden.vtt", "filename"),
        ("..", "filename"),
        ("", "filename"),
        ("n" * 201 + ".txt", "filename"),
        ("tab\tname.txt", "filename"),
    ],
)
def test_a_filename_that_is_not_a_plain_name_is_422_saying_why(s3, filename, why):
    status, answer = call("POST", "/v1/uploads", {"project_id": "remote", "filename": filename})
    assert status == 422 and why in answer["error"]["message"]


def test_a_file_over_the_ingest_limit_is_refused(s3, monkeypatch):
    from rag.config import get_settings

    monkeypatch.setenv("RAG_MAX_OBJECT_BYTES", "1000")
    get_settings.cache_clear()
    status, answer = call("POST", "/v1/uploads", {"project_id": "remote", "filename": "big.txt", "size": 1001})
    assert status == 413 and answer["error"]["code"] == "too_large" and "1000" in answer["error"]["message"]
    assert call("POST", "/v1/uploads", {"project_id": "remote", "filename": "big.txt", "size": 1000})[0] == 201


def test_without_a_bucket_uploads_are_503():
    status, answer = call("POST", "/v1/uploads", {"project_id": "remote", "filename": "notes.vtt"})
    assert status == 503 and answer["error"]["code"] == "uploads_unavailable"


def test_without_identity_no_ticket(s3):
    assert call("POST", "/v1/uploads", {"project_id": "remote", "filename": "notes.vtt"}, tenant=None)[0] == 401


def test_the_local_bucket_lets_the_page_put_from_its_origin(s3):
    """What the browser asks before the PUT (a CORS preflight), answered by the local moto server."""
    ticket = call("POST", "/v1/uploads", {"project_id": "remote", "filename": "notes.vtt"})[1]
    preflight = requests.options(
        ticket["url"],
        headers={"Origin": "http://127.0.0.1:8000", "Access-Control-Request-Method": "PUT",
                 "Access-Control-Request-Headers": "content-type"},
        timeout=30,
    )  # fmt: skip
    assert preflight.status_code == 200
    assert preflight.headers["Access-Control-Allow-Origin"] in ("*", "http://127.0.0.1:8000")
