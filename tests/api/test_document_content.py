"""GET /v1/documents and GET /v1/documents/{id}/content through the real handler on the real database: the tenant's
documents only, counts by status, a text window with exactly the turns that overlap it, segments and items."""

from __future__ import annotations

import json

import pytest

from tests.api.conftest import call

pytestmark = pytest.mark.slow

REVIEW = "projects/remote/2026-11-02-battery-review.txt"
STATUSES = {"raw_ingested", "segmented", "embedded", "extracted", "failed"}


@pytest.fixture(scope="module")
def failed_document(corpus, database_url) -> str:
    """One of acme's documents that ingest failed, with its error (in project 'remote')."""
    from rag.store.connection import connect

    with connect(database_url) as conn:
        row = conn.execute(
            """INSERT INTO documents (tenant_id, project_id, bucket, object_key, kind, format, status, error, created_at)
               VALUES ('acme', 'remote', 'api-test', 'tenants/acme/projects/remote/broken.vtt', 'transcript', 'vtt',
                       'failed', 'line 3: not a WebVTT cue', now() + interval '1 minute')
               RETURNING id::text"""
        ).fetchone()
    return str(row[0])


def test_the_list_holds_the_callers_documents_newest_first_with_counts(corpus, failed_document, database_url):
    from rag.store.connection import connect

    status, body = call("GET", "/v1/documents?project_id=remote")
    assert status == 200
    listed = body["documents"]
    acme_remote = {v for k, v in corpus.items() if k.startswith("projects/remote/") and "globex" not in k}
    assert {d["document_id"] for d in listed} == acme_remote | {failed_document}
    assert listed[0]["document_id"] == failed_document  # the newest
    assert [d["created_at"] for d in listed] == sorted((d["created_at"] for d in listed), reverse=True)
    failed = listed[0]
    assert (failed["status"], failed["error"], failed["chunk_count"]) == ("failed", "line 3: not a WebVTT cue", 0)
    assert failed["source"] == {"uri": "s3://api-test/tenants/acme/projects/remote/broken.vtt", "title": None}
    with connect(database_url) as conn:
        expected = dict(
            conn.execute(
                "SELECT status, count(*) FROM documents WHERE tenant_id = 'acme' AND project_id = 'remote' GROUP BY 1"
            ).fetchall()
        )
    assert body["counts"] == {s: expected.get(s, 0) for s in STATUSES} and body["counts"]["failed"] == 1
    assert sum(body["counts"].values()) == len(listed)


def test_a_status_filter_and_a_limit_narrow_the_list_but_not_the_counts(corpus, failed_document):
    everything = call("GET", "/v1/documents?project_id=remote")[1]
    status, failed = call("GET", "/v1/documents?project_id=remote&status=failed")
    assert status == 200 and [d["document_id"] for d in failed["documents"]] == [failed_document]
    assert failed["counts"] == everything["counts"]
    first = call("GET", "/v1/documents?project_id=remote&limit=1")[1]
    assert [d["document_id"] for d in first["documents"]] == [failed_document]
    assert first["counts"] == everything["counts"]


def test_another_tenant_lists_only_its_own(corpus, failed_document):
    status, body = call("GET", "/v1/documents", tenant="globex")
    assert status == 200
    assert [d["document_id"] for d in body["documents"]] == [corpus["projects/remote/globex-secret.txt"]]
    assert sum(body["counts"].values()) == 1


@pytest.mark.parametrize("query", ["status=done", "limit=0", "limit=501", "project_id=../x", "project_id=" + "p" * 129])
def test_bad_list_parameters_are_422(corpus, query):
    status, body = call("GET", f"/v1/documents?{query}")
    assert status == 422 and body["error"]["code"] == "validation_error"


def stored(database_url: str, document_id: str) -> tuple[str, list[list]]:
    from rag.store.connection import connect

    with connect(database_url) as conn:
        body, turns = conn.execute("SELECT body, turns FROM documents WHERE id = %s", (document_id,)).fetchone()
    return body, turns


def test_the_window_holds_the_text_and_exactly_the_turns_overlapping_it(corpus, database_url):
    document_id = corpus[REVIEW]
    body, turns = stored(database_url, document_id)
    assert len(turns) >= 6
    # From the middle of turn 2 to exactly the start of turn 5: turns 2, 3 and 4 overlap it, 1 and 5 touch it only.
    offset = (turns[2][1] + turns[2][2]) // 2
    limit = turns[5][1] - offset
    assert turns[1][2] <= offset  # turn 1 ends before the window (or where it starts)
    status, content = call("GET", f"/v1/documents/{document_id}/content?offset={offset}&limit={limit}")
    assert status == 200
    assert content["text"] == body[offset : offset + limit] and content["length"] == len(body)
    assert (content["offset"], content["truncated"]) == (offset, True)
    assert [t["index"] for t in content["turns"]] == [2, 3, 4]
    speaker, start, end, start_s, end_s = turns[3]
    assert content["turns"][1] == {"index": 3, "speaker": speaker, "start_char": start, "end_char": end,
                                   "start_s": start_s, "end_s": end_s}  # fmt: skip
    assert body[start:end].strip()  # offsets are into the whole body
    whole = call("GET", f"/v1/documents/{document_id}/content")[1]
    assert whole["text"] == body and whole["truncated"] is False and len(whole["turns"]) == len(turns)
    assert [t["index"] for t in whole["turns"]] == list(range(len(turns)))
    assert whole["source"]["uri"] == f"s3://api-test/tenants/acme/{REVIEW}"
    assert whole["kind"] == "transcript" and whole["project_id"] == "remote" and whole["participants"]


def test_a_window_past_the_end_is_empty(corpus, database_url):
    document_id = corpus[REVIEW]
    body, _ = stored(database_url, document_id)
    status, content = call("GET", f"/v1/documents/{document_id}/content?offset={len(body) + 10}")
    assert status == 200
    assert (content["text"], content["turns"], content["truncated"], content["length"]) == ("", [], False, len(body))


def test_segments_and_items_come_with_the_content(knowledge, corpus):
    document_id = corpus[REVIEW]
    status, content = call("GET", f"/v1/documents/{document_id}/content")
    assert status == 200
    assert [s["title"] for s in content["segments"]] == ["Rechargeable battery decision"]
    assert content["segments"][0]["start_turn"] == 0 and content["segments"][0]["end_turn"] == 6
    decision = "Switch the remote to a rechargeable battery pack with a USB-C port"
    items = {item["description"]: item for item in content["items"]}
    assert items[decision]["kind"] == "decision" and items[decision]["id"] == str(knowledge[decision])
    assert (items[decision]["start_turn"], items[decision]["end_turn"]) == (5, 7)
    assert items[decision]["speakers"] == ["Maya", "Jonas"]
    assert {"decision", "risk", "task"} <= {item["kind"] for item in content["items"]}
    assert [i["start_char"] for i in content["items"]] == sorted(i["start_char"] for i in content["items"])


def test_another_tenants_document_is_404(corpus):
    acme_document = corpus[REVIEW]
    status, body = call("GET", f"/v1/documents/{acme_document}/content", tenant="globex")
    assert status == 404 and body["error"]["code"] == "not_found"
    assert "Maya" not in json.dumps(body)
    own = corpus["projects/remote/globex-secret.txt"]
    assert call("GET", f"/v1/documents/{own}/content", tenant="globex")[0] == 200
    assert call("GET", "/v1/documents/00000000-0000-0000-0000-000000000000/content")[0] == 404


def test_a_window_at_the_largest_offset_is_empty_and_one_past_it_is_422(corpus):
    status, content = call("GET", f"/v1/documents/{corpus[REVIEW]}/content?offset=1000000000&limit=5")
    assert status == 200 and (content["text"], content["turns"]) == ("", [])


@pytest.mark.parametrize("query", ["offset=-1", "limit=0", "limit=1000001", "offset=x", "offset=1000000001",
                                   "offset=3000000000"])  # fmt: skip
def test_bad_window_parameters_are_422(corpus, query):
    status, body = call("GET", f"/v1/documents/{corpus[REVIEW]}/content?{query}")
    assert status == 422 and body["error"]["code"] == "validation_error"


def test_no_identity_no_content(corpus):
    assert call("GET", f"/v1/documents/{corpus[REVIEW]}/content", tenant=None)[0] == 401
    assert call("GET", "/v1/documents", tenant=None)[0] == 401
