"""The LLM paths of segment and extract against an OpenAI-compatible server on localhost.

The server (tests/embedding/fake_openai.py) answers chat completions with recorded
structured outputs (tests/fixtures/backfill/llm/); the SDK's parsing, our validation and
normalization, and the rows written are all real.
"""

from __future__ import annotations

import json
from datetime import date

import pytest

from rag.backfill.errors import TransientError
from rag.backfill.stages import run_named_stage
from tests.backfill.conftest import FIXTURES, SCANNER_SYNC, ingest_file
from tests.embedding.fake_openai import FakeOpenAI, RawBody

RECORDED = FIXTURES / "llm"


def recorded(name: str) -> dict:
    return json.loads((RECORDED / name).read_text())


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def llm_settings(fake, database_url):
    from rag.config import Settings

    return Settings(
        embedding_provider="local",
        llm_provider="openai",
        llm_model="gpt-4o-mini",
        openai_base_url=fake.base_url,
        llm_max_retries=1,
    )


def chat_requests(fake):
    return [r for r in fake.requests if r["path"] == "/v1/chat/completions"]


def test_llm_segments_are_validated_normalized_and_written(db, local_embedder, fake, llm_settings):
    doc = ingest_file(db, SCANNER_SYNC, local_embedder)
    body = db.execute("SELECT body FROM documents WHERE id = %s", (doc,)).fetchone()[0]
    fake.chat_responses.append(recorded("segment_scanner_rollout_sync.json"))

    result = run_named_stage(db, llm_settings, "segment", 10, embedder=local_embedder)

    assert (result.processed, result.failed) == (1, 0)
    [request] = chat_requests(fake)
    assert request["auth"] == "Bearer sk-test-not-a-real-key"
    assert request["body"]["model"] == "gpt-4o-mini"
    schema = request["body"]["response_format"]
    assert schema["type"] == "json_schema" and schema["json_schema"]["strict"] is True
    assert schema["json_schema"]["name"] == "ProposedSegmentation"
    assert (
        "[12] Priya: Next topic, the trade show in Rotterdam next month and our booth."
        in request["body"]["messages"][1]["content"]
    )
    rows = db.execute(
        "SELECT start_turn, end_turn, title, method, start_char, end_char, speakers FROM segments WHERE document_id = %s ORDER BY segment_index",
        (doc,),
    ).fetchall()
    # The model left turn 11 out: the ranges are made contiguous (0-11, 12-23).
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [
        (0, 11, "Leeds warehouse scanner rollout", "llm"),
        (12, 23, "Rotterdam trade show booth", "llm"),
    ]
    assert body[rows[1][4] : rows[1][5]].startswith("Priya: Next topic") and rows[1][5] == len(body.rstrip("\n"))
    assert rows[0][6] == ["Priya", "Tom", "Aisha"]


def test_llm_extraction_writes_structured_items_with_their_sources(db, local_embedder, fake, llm_settings):
    doc = ingest_file(db, SCANNER_SYNC, local_embedder)
    body = db.execute("SELECT body FROM documents WHERE id = %s", (doc,)).fetchone()[0]
    fake.chat_responses += [
        recorded("segment_scanner_rollout_sync.json"),
        recorded("extract_scanner_rollout_sync_0.json"),
        recorded("extract_scanner_rollout_sync_1.json"),
    ]
    for stage in ("segment", "embed", "extract"):
        assert run_named_stage(db, llm_settings, stage, 10, embedder=local_embedder).processed == 1

    extract_requests = chat_requests(fake)[1:]
    assert [r["body"]["response_format"]["json_schema"]["name"] for r in extract_requests] == ["ProposedKnowledge"] * 2
    assert "Meeting date: 2026-11-10" in extract_requests[0]["body"]["messages"][1]["content"]
    decisions = db.execute(
        "SELECT description, rationale, owner, status, start_turn, end_turn, start_char, end_char, speakers, method FROM decisions"
        " WHERE document_id = %s ORDER BY start_turn",
        (doc,),
    ).fetchall()
    assert decisions[0][:6] == (
        "Flash firmware 2.3 on every scanner before it goes on the warehouse floor.",
        "Firmware 2.1 drops the wifi connection near the loading docks.", "Priya", "current", 7, 8,
    )  # fmt: skip
    assert body[decisions[0][6] : decisions[0][7]].startswith("Aisha: We decided") is False  # utterances, not speaker labels
    assert body[decisions[0][6] : decisions[0][7]].startswith("We decided in the pilot review")
    assert body[decisions[0][6] : decisions[0][7]].endswith("Every scanner gets two point three before go-live.")
    assert decisions[0][8] == ["Aisha", "Priya"] and {d[9] for d in decisions} == {"llm"}
    tasks = db.execute(
        "SELECT assignee, due_date, status, start_turn, end_turn FROM tasks WHERE document_id = %s ORDER BY start_turn", (doc,)
    ).fetchall()
    assert tasks == [
        ("Tom", date(2026, 11, 13), "open", 9, 9),
        ("Tom", None, "open", 10, 11),
        ("Aisha", date(2026, 11, 20), "open", 20, 20),
    ]
    risks = db.execute(
        "SELECT category, likelihood, mitigation FROM risks WHERE document_id = %s ORDER BY start_turn", (doc,)
    ).fetchall()
    assert risks == [
        ("technical", "medium", "Keep two spare scanners in the office."),
        ("schedule", "medium", "Send the artwork by the twentieth."),
    ]
    opportunity = db.execute(
        "SELECT type, owner, next_step, embedding_model FROM opportunities WHERE document_id = %s", (doc,)
    ).fetchall()
    assert opportunity == [("sales", "Marco", "Book demos at the booth.", local_embedder.model_id)]


def test_an_llm_answer_outside_the_segment_is_a_document_error(db, local_embedder, fake, llm_settings):
    docs = [ingest_file(db, SCANNER_SYNC, local_embedder, key=f"projects/orion/sync-{i}.txt") for i in range(2)]
    fake.chat_responses += [recorded("segment_scanner_rollout_sync.json")] * 2
    for stage in ("segment", "embed"):
        run_named_stage(db, llm_settings, stage, 10, embedder=local_embedder)
    wrong = recorded("extract_scanner_rollout_sync_0.json")
    wrong["tasks"][0]["first"] = wrong["tasks"][0]["last"] = 30  # there is no turn 30
    # Whichever document comes first gets the wrong answer and stops there; the other gets good ones.
    fake.chat_responses += [
        wrong,
        recorded("extract_scanner_rollout_sync_0.json"),
        recorded("extract_scanner_rollout_sync_1.json"),
    ]

    result = run_named_stage(db, llm_settings, "extract", 10, embedder=local_embedder)

    assert (result.processed, result.failed) == (1, 1)
    rows = dict(db.execute("SELECT status, backfill_error FROM documents WHERE id = ANY(%s)", (docs,)).fetchall())
    assert set(rows) == {"embedded", "extracted"} and rows["extracted"] is None
    assert rows["embedded"].startswith("extract: LLMOutputError: task 'Flash all forty scanners")
    assert "outside the segment's 0-11" in rows["embedded"]
    per_document = dict(
        db.execute(
            "SELECT d.status, count(t.id) FROM documents d LEFT JOIN tasks t ON t.document_id = d.id GROUP BY 1"
        ).fetchall()
    )
    assert per_document == {"embedded": 0, "extracted": 3}  # the failed document kept no partial items


def test_an_answer_that_does_not_fit_the_schema_is_a_document_error(db, local_embedder, fake, llm_settings):
    doc = ingest_file(db, SCANNER_SYNC, local_embedder)
    fake.chat_responses.append({"segments": [{"start_turn": 0, "title": "No end turn"}]})

    result = run_named_stage(db, llm_settings, "segment", 10, embedder=local_embedder)

    assert (result.processed, result.failed) == (0, 1)
    error = db.execute("SELECT backfill_error FROM documents WHERE id = %s", (doc,)).fetchone()[0]
    assert error.startswith("segment: LLMOutputError: LLM gpt-4o-mini answer does not fit ProposedSegmentation")


def test_an_unavailable_llm_rolls_the_batch_back_for_a_retry(db, local_embedder, fake, llm_settings):
    ingest_file(db, SCANNER_SYNC, local_embedder)
    fake.fail_next = [503, 503]  # the first try and the one SDK retry (llm_max_retries=1)

    with pytest.raises(TransientError, match="LLM gpt-4o-mini unavailable after retries"):
        run_named_stage(db, llm_settings, "segment", 10, embedder=local_embedder)

    assert len(chat_requests(fake)) == 2
    assert db.execute("SELECT status, backfill_error, backfill_attempts FROM documents").fetchone() == ("raw_ingested", None, 0)


def test_llm_extraction_on_a_document_points_at_sentences(db, local_embedder, fake, llm_settings):
    from tests.backfill.conftest import RELEASE_PROCESS

    doc = ingest_file(db, RELEASE_PROCESS, local_embedder, meeting_date=None)
    body = db.execute("SELECT body FROM documents WHERE id = %s", (doc,)).fetchone()[0]
    empty = {"decisions": [], "risks": [], "opportunities": [], "tasks": [], "changes": []}
    testing = {
        **empty,
        "decisions": [{"first": 1, "last": 1, "evidence": "We decided to require two QA sign-offs",
                       "description": "Require two QA sign-offs before store submission.", "rationale": None,
                       "owner": "QA team", "impact": None, "supersedes": None}],
    }  # fmt: skip
    submission = {
        **empty,
        "tasks": [{"first": 2, "last": 2, "evidence": "The release manager will post the submission status",
                   "description": "Post the store submission status in the release channel.", "assignee": "release manager",
                   "due_date": None, "status": "open"}],
    }  # fmt: skip
    fake.chat_responses += [empty, empty, testing, submission]  # one call per heading section, in order
    for stage in ("segment", "embed", "extract"):
        assert run_named_stage(db, llm_settings, stage, 10, embedder=local_embedder).processed == 1

    requests = chat_requests(fake)
    assert len(requests) == 4  # sections come from headings, so segmenting asked nothing
    assert "[1] We decided to require two QA sign-offs" in requests[2]["body"]["messages"][1]["content"]
    assert "## Testing" not in requests[2]["body"]["messages"][1]["content"]
    decision = db.execute(
        "SELECT start_char, end_char, start_turn, speakers, owner FROM decisions WHERE document_id = %s", (doc,)
    ).fetchone()
    assert body[decision[0] : decision[1]] == "We decided to require two QA sign-offs before a build goes to the app stores."
    assert decision[2:] == (None, [], "QA team")
    task = db.execute("SELECT start_char, end_char, assignee FROM tasks WHERE document_id = %s", (doc,)).fetchone()
    assert body[task[0] : task[1]] == "The release manager will post the submission status in the release channel."


# --- replies that are not a chat completion, and answers that are not what was asked for ---------

HTML_PAGE = b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
NOT_A_CHAT_COMPLETION = {
    "not-json": RawBody(b"upstream connect error or disconnect/reset before headers"),
    "html": RawBody(HTML_PAGE, "text/html"),
    "empty": RawBody(b""),
    "json-of-another-shape": RawBody(b'{"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini"}'),
    "no-choice": RawBody(b'{"object": "chat.completion", "choices": []}'),
    "choice-without-message": RawBody(b'{"choices": [{"index": 0, "finish_reason": "stop"}]}'),
    "content-not-text": RawBody(b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": {"segments": []}}}]}'),
    "json-array": RawBody(b"[1, 2]"),
    "json-string": RawBody(b'"just a string"'),
    "json-null": RawBody(b"null"),
}


def completion_body(message: dict, finish_reason: str = "stop") -> RawBody:
    """A well-formed chat completion holding ``message`` (what a real server sends)."""
    return RawBody(
        json.dumps(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1_763_000_000,
                "model": "gpt-4o-mini",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": finish_reason,
                        "logprobs": None,
                        "message": {"role": "assistant", "content": None, "refusal": None, **message},
                    }
                ],
            }
        ).encode()  # fmt: skip
    )


def document_rows(db, docs):
    rows = db.execute(
        "SELECT id, status, backfill_error, backfill_attempts FROM documents WHERE id = ANY(%s)", (docs,)
    ).fetchall()
    by_id = {row[0]: row[1:] for row in rows}
    return [by_id[doc] for doc in docs]


@pytest.mark.parametrize("reply", NOT_A_CHAT_COMPLETION.values(), ids=NOT_A_CHAT_COMPLETION.keys())
def test_a_reply_that_is_not_a_chat_completion_is_retried_then_rolls_the_batch_back(
    db, local_embedder, fake, llm_settings, reply
):
    docs = [ingest_file(db, SCANNER_SYNC, local_embedder, key=f"projects/orion/sync-{i}.txt") for i in range(2)]
    # The first document is segmented; the second's reply is not a chat completion, twice (llm_max_retries=1).
    fake.chat_responses += [recorded("segment_scanner_rollout_sync.json"), reply, reply]

    with pytest.raises(TransientError) as raised:
        run_named_stage(db, llm_settings, "segment", 10, embedder=local_embedder)

    message = str(raised.value)
    assert message.startswith("LLM gpt-4o-mini answered with a ") and message.endswith(" (asked 2 times)")
    assert repr(reply.body.decode())[:40] in message  # what the server sent, to tell a proxy's page from a model server's
    assert len(chat_requests(fake)) == 3
    # The batch is rolled back as a whole: nothing written, no attempt counted, both claimable again.
    assert document_rows(db, docs) == [("raw_ingested", None, 0)] * 2
    assert db.execute("SELECT count(*) FROM segments").fetchone()[0] == 0

    fake.chat_responses += [recorded("segment_scanner_rollout_sync.json")] * 2
    result = run_named_stage(db, llm_settings, "segment", 10, embedder=local_embedder)

    assert (result.processed, result.failed) == (2, 0)
    assert document_rows(db, docs) == [("segmented", None, 0)] * 2
    assert db.execute("SELECT count(*) FROM segments WHERE method = 'llm'").fetchone()[0] == 4


def test_the_error_shows_what_the_server_answered(db, local_embedder, fake, llm_settings):
    ingest_file(db, SCANNER_SYNC, local_embedder)
    fake.chat_responses += [RawBody(HTML_PAGE, "text/html")] * 2

    with pytest.raises(TransientError) as raised:
        run_named_stage(db, llm_settings, "segment", 10, embedder=local_embedder)

    assert str(raised.value) == (
        "LLM gpt-4o-mini answered with a body that is not JSON (Expecting value: line 1 column 1 (char 0)):"
        " '<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>' (asked 2 times)"
    )


def test_one_reply_that_is_not_a_chat_completion_is_retried_within_the_call(db, local_embedder, fake, llm_settings):
    doc = ingest_file(db, SCANNER_SYNC, local_embedder)
    fake.chat_responses += [RawBody(HTML_PAGE, "text/html"), recorded("segment_scanner_rollout_sync.json")]

    result = run_named_stage(db, llm_settings, "segment", 10, embedder=local_embedder)

    assert (result.processed, result.failed) == (1, 0)
    requests = chat_requests(fake)
    assert len(requests) == 2 and requests[0]["body"] == requests[1]["body"]  # the same request again
    assert document_rows(db, [doc]) == [("segmented", None, 0)]
    titles = db.execute("SELECT title FROM segments WHERE document_id = %s ORDER BY segment_index", (doc,)).fetchall()
    assert titles == [("Leeds warehouse scanner rollout",), ("Rotterdam trade show booth",)]


def test_extraction_interrupted_by_a_malformed_reply_keeps_no_partial_items_and_completes_on_retry(
    db, local_embedder, fake, llm_settings
):
    docs = [ingest_file(db, SCANNER_SYNC, local_embedder, key=f"projects/orion/sync-{i}.txt") for i in range(2)]
    fake.chat_responses += [recorded("segment_scanner_rollout_sync.json")] * 2
    for stage in ("segment", "embed"):
        run_named_stage(db, llm_settings, stage, 10, embedder=local_embedder)
    extracted = [recorded("extract_scanner_rollout_sync_0.json"), recorded("extract_scanner_rollout_sync_1.json")]
    # One document's two segments are extracted, then the other's first segment gets a proxy's page twice.
    fake.chat_responses += [*extracted, RawBody(HTML_PAGE, "text/html"), RawBody(HTML_PAGE, "text/html")]

    with pytest.raises(TransientError):
        run_named_stage(db, llm_settings, "extract", 10, embedder=local_embedder)

    assert document_rows(db, docs) == [("embedded", None, 0)] * 2
    assert db.execute("SELECT count(*) FROM decisions").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM tasks").fetchone()[0] == 0

    fake.chat_responses += extracted * 2
    result = run_named_stage(db, llm_settings, "extract", 10, embedder=local_embedder)

    assert (result.processed, result.failed) == (2, 0)
    assert document_rows(db, docs) == [("extracted", None, 0)] * 2
    per_document = db.execute("SELECT document_id, count(*) FROM tasks GROUP BY 1").fetchall()
    assert sorted(count for _, count in per_document) == [3, 3]  # each document's items once, none twice


ANSWERS_NOT_ASKED_FOR = {
    "prose": (completion_body({"content": "Sure! The meeting has two topics: scanners and the trade show."}),
              "answer does not fit ProposedSegmentation"),
    "json-array": (completion_body({"content": "[1, 2]"}), "answer does not fit ProposedSegmentation"),
    "another-schema": (completion_body({"content": json.dumps({"topics": ["scanners", "trade show"]})}),
                       "answer does not fit ProposedSegmentation"),
    "cut-at-the-token-limit": (completion_body({"content": '{"segments": [{"start_turn": 0, "end_t'}, "length"),
                               "answer was cut at its token limit"),
    "filtered": (completion_body({"content": None}, "content_filter"), "answer was withheld by its content filter"),
    "refusal": (completion_body({"refusal": "I can't help with that."}), "refused: I can't help with that."),
    "no-content": (completion_body({"content": None}), "returned no ProposedSegmentation"),
}  # fmt: skip


@pytest.mark.parametrize(("reply", "error"), ANSWERS_NOT_ASKED_FOR.values(), ids=ANSWERS_NOT_ASKED_FOR.keys())
def test_an_answer_that_is_not_what_was_asked_for_fails_only_its_document(db, local_embedder, fake, llm_settings, reply, error):
    docs = [ingest_file(db, SCANNER_SYNC, local_embedder, key=f"projects/orion/sync-{i}.txt") for i in range(2)]
    fake.chat_responses += [reply, recorded("segment_scanner_rollout_sync.json")]

    result = run_named_stage(db, llm_settings, "segment", 10, embedder=local_embedder)

    assert (result.processed, result.failed) == (1, 1)
    assert len(chat_requests(fake)) == 2  # the model's own answer is not asked again within the call
    [failed, segmented] = sorted(document_rows(db, docs), key=lambda row: row[0])
    assert failed[0] == "raw_ingested" and failed[2] == 1  # claimable again on the next run, up to the attempt limit
    assert failed[1] == f"segment: LLMOutputError: LLM gpt-4o-mini {error}" or failed[1].startswith(
        f"segment: LLMOutputError: LLM gpt-4o-mini {error}:"
    )
    assert segmented == ("segmented", None, 0)


@pytest.fixture
def bedrock(monkeypatch):
    """Bedrock Runtime on localhost (its wire format; botocore signs real requests), and settings that use it."""
    from rag.config import Settings
    from rag.llm_bedrock import _client
    from tests.artifact.fake_bedrock import FakeBedrock

    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "eu-west-1",
    }.items():
        monkeypatch.setenv(name, value)
    with FakeBedrock() as server:
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", server.url)
        _client.cache_clear()  # a client reads its endpoint when made
        settings = Settings(embedding_provider="local", llm_provider="bedrock", bedrock_chat_model="anthropic.claude-test",
                            llm_max_retries=0, aws_region="eu-west-1")  # fmt: skip
        yield server, settings
    _client.cache_clear()


def test_with_bedrock_the_backfill_segments_and_extracts_through_converse(db, local_embedder, bedrock):
    server, settings = bedrock
    doc = ingest_file(db, SCANNER_SYNC, local_embedder)
    server.converse_responses += [
        server.tool_reply("ProposedSegmentation", recorded("segment_scanner_rollout_sync.json")),
        server.tool_reply("ProposedKnowledge", recorded("extract_scanner_rollout_sync_0.json")),
        server.tool_reply("ProposedKnowledge", recorded("extract_scanner_rollout_sync_1.json")),
    ]
    for stage in ("segment", "embed", "extract"):
        assert run_named_stage(db, settings, stage, 10, embedder=local_embedder).processed == 1

    assert [(r["model"], r["operation"]) for r in server.requests] == [("anthropic.claude-test", "converse")] * 3
    assert all(r["auth"].startswith("AWS4-HMAC-SHA256 Credential=testing/") for r in server.requests)
    tools = [r["body"]["toolConfig"] for r in server.requests]
    assert [t["toolChoice"] for t in tools] == [
        {"tool": {"name": n}} for n in ("ProposedSegmentation", *["ProposedKnowledge"] * 2)
    ]
    assert all("$ref" not in json.dumps(t["tools"]) for t in tools)
    assert "Meeting date: 2026-11-10" in server.requests[1]["body"]["messages"][0]["content"][0]["text"]
    segments = db.execute("SELECT start_turn, end_turn, method FROM segments ORDER BY segment_index").fetchall()
    assert segments == [(0, 11, "llm"), (12, 23, "llm")]
    decisions = db.execute("SELECT description, owner, start_turn, method FROM decisions ORDER BY start_turn").fetchall()
    assert decisions[0] == ("Flash firmware 2.3 on every scanner before it goes on the warehouse floor.", "Priya", 7, "llm")
    tasks = db.execute("SELECT assignee, due_date, start_turn FROM tasks WHERE document_id = %s ORDER BY start_turn", (doc,))
    assert tasks.fetchall() == [("Tom", date(2026, 11, 13), 9), ("Tom", None, 10), ("Aisha", date(2026, 11, 20), 20)]


def test_with_bedrock_a_model_not_enabled_fails_each_document_with_the_refusal(db, local_embedder, bedrock):
    """No model access is the same answer on every retry: a failed document that says why, not a retry loop."""
    server, settings = bedrock
    doc = ingest_file(db, SCANNER_SYNC, local_embedder)
    refusal = b'{"message": "You don\'t have access to the model with the specified model ID."}'
    server.converse_responses.append((403, refusal, "AccessDeniedException"))

    result = run_named_stage(db, settings, "segment", 10, embedder=local_embedder)

    assert (result.processed, result.failed) == (0, 1)
    [(status, error, attempts)] = document_rows(db, [doc])
    assert error.startswith(
        "segment: LLMOutputError: Bedrock anthropic.claude-test rejected the request: An error occurred"
        " (AccessDeniedException) when calling the Converse operation"
    )
    assert error.endswith(": You don't have access to the model with the specified model ID.")
    assert attempts == 1 and len(server.requests) == 1


def test_with_bedrock_throttling_rolls_the_batch_back_for_a_retry(db, local_embedder, bedrock):
    server, settings = bedrock
    doc = ingest_file(db, SCANNER_SYNC, local_embedder)
    server.converse_responses.append((429, b'{"message": "Too many requests, please wait."}', "ThrottlingException"))

    with pytest.raises(TransientError, match="Bedrock anthropic.claude-test unavailable after retries"):
        run_named_stage(db, settings, "segment", 10, embedder=local_embedder)

    assert document_rows(db, [doc]) == [("raw_ingested", None, 0)] and len(server.requests) == 1  # claimable again


@pytest.mark.slow
def test_a_model_server_that_keeps_answering_html_fails_the_execution_with_its_page_and_loses_nothing(
    db, local_embedder, fake, monkeypatch
):
    """Through the real stage Lambda and the synthesized state machine: the Lambda's error is the
    TransientError its Retry matches, retried (1 + 3 attempts), then caught; the document is left as it was."""
    from rag.config import get_settings
    from rag_local.state_machine import backfill_definition, run_backfill_state_machine

    doc = ingest_file(db, SCANNER_SYNC, local_embedder)
    for name, value in {"RAG_LLM_PROVIDER": "openai", "RAG_LLM_MODEL": "gpt-4o-mini", "RAG_LLM_MAX_RETRIES": "1",
                        "OPENAI_BASE_URL": fake.base_url, "RAG_EMBEDDING_PROVIDER": "local"}.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    fake.chat_responses += [RawBody(HTML_PAGE, "text/html")] * 8  # every call of every attempt

    execution = run_backfill_state_machine({"stages": ["segment"], "batch_size": 5}, definition=backfill_definition())

    assert (execution["status"], execution["error"]) == ("FAILED", "BackfillStageFailed")
    error = execution["cause_json"]["errors"]["segment"]
    assert error["Error"] == "TransientError"
    assert "LLM gpt-4o-mini answered with a body that is not JSON" in error["Cause"]
    assert "<html><head><title>502 Bad Gateway</title>" in error["Cause"]
    assert len(chat_requests(fake)) == 8 and not fake.chat_responses  # 4 Lambda attempts, each asking twice
    assert document_rows(db, [doc]) == [("raw_ingested", None, 0)]
    assert db.execute("SELECT count(*) FROM segments").fetchone()[0] == 0


def test_the_model_links_a_later_meeting_to_the_earlier_items_it_changes(db, local_embedder, fake, llm_settings, settings):
    """The prompt lists the project's earlier open items (E1, E2, ...); the model's links are stored and applied."""
    kickoff, update = sorted((FIXTURES / "timeline").iterdir())[:2]

    def backfill(path):
        extract_with_model(db, path, settings, llm_settings, local_embedder)

    fake.chat_responses += [
        {
            "decisions": [{**located(2, "We decided to move into the Harbor Street office on March 2.",
                                     "Move into the Harbor Street office on March 2."),
                           "rationale": None, "owner": "Ines Duarte", "impact": None, "supersedes": None},
                          # words that share the office and say "instead": a model's decisions of one meeting both stand
                          {**located(4, "the furniture budget is forty thousand euros",
                                     "The furniture moves to the Harbor Street office with us instead of into storage."),
                           "rationale": None, "owner": "Ines Duarte", "impact": None, "supersedes": None}],
            "risks": [{**located(5, "the landlord may not finish the network cabling",
                                 "The network cabling may not be finished before the move."),
                       "category": "schedule", "likelihood": "medium", "impact": None, "mitigation": None}],
            "opportunities": [],
            "tasks": [{**located(6, "get three quotes from removal companies by January 23",
                                 "Get three quotes from removal companies."),
                       "assignee": "Mark", "due_date": "2026-01-23", "status": "open"}],
            "changes": [],
        },
        {
            "decisions": [{**located(2, "we decided to move into the Harbor Street office on March 16 instead",
                                     "Move into the Harbor Street office on March 16."),
                           "rationale": "The landlord needs two more weeks.", "owner": "Ines Duarte", "impact": None,
                           "supersedes": "E1"}],
            "risks": [], "opportunities": [], "tasks": [],
            "changes": [
                {**located(1, "I sent the three removal quotes on Thursday", "unused"), "item": "E4", "change": "done",
                 "new_owner": None, "new_due_date": None},
                {**located(3, "I'd call the cabling risk closed", "unused"), "item": "E3", "change": "closed",
                 "new_owner": None, "new_due_date": None},
                {**located(3, "Yes, I'll take it.", "unused"), "item": "E1", "change": "done",  # names a decision
                 "new_owner": None, "new_due_date": None},
            ],
        },
    ]  # fmt: skip
    backfill(kickoff)
    backfill(update)

    first, second = (r["body"]["messages"][1]["content"] for r in chat_requests(fake))
    assert "Earlier items" not in first
    assert second.startswith(
        "Earlier items of this project that are still current or open:\n"
        "E1 (decision, 2026-01-12): Move into the Harbor Street office on March 2.\n"
        "E2 (decision, 2026-01-12): The furniture moves to the Harbor Street office with us instead of into storage.\n"
        "E3 (risk, 2026-01-12): The network cabling may not be finished before the move.\n"
        "E4 (task, 2026-01-12): Get three quotes from removal companies.\n\n"
        "Meeting date: 2026-01-26\n"
    )
    rows = db.execute("SELECT id, description, status, superseded_by, stated FROM decisions ORDER BY id").fetchall()
    assert [(r[2], r[3]) for r in rows] == [("superseded", rows[2][0]), ("current", None), ("current", None)]
    assert rows[2][4] == {"supersedes": "Move into the Harbor Street office on March 2."}
    assert db.execute("SELECT status FROM risks").fetchall() == [("closed",)]
    assert db.execute("SELECT status, assignee FROM tasks").fetchall() == [("done", "Mark Feld")]
    changes = db.execute(
        "SELECT change, evidence, method, target_kind, start_turn FROM knowledge_changes ORDER BY start_turn"
    ).fetchall()  # the change naming a decision is dropped: decisions change by being superseded
    assert changes == [
        ("done", "I sent the three removal quotes on Thursday", "llm", "task", 1),
        ("closed", "I'd call the cabling risk closed", "llm", "risk", 3),
    ]


def extract_with_model(db, path, settings, llm_settings, local_embedder):
    """A meeting ingested into the office project, segmented offline and extracted by the (fake) model: only the
    extraction's prompt and answer are under test."""
    ingest_file(db, path, local_embedder, project="office", meeting_date=date.fromisoformat(path.name[:10]))
    for stage in ("segment", "embed"):
        run_named_stage(db, settings, stage, 10, embedder=local_embedder)
    result = run_named_stage(db, llm_settings, "extract", 10, embedder=local_embedder)
    assert result.processed == 1, db.execute("SELECT backfill_error FROM documents").fetchall()


def located(first, evidence, description):
    return {"first": first, "last": first, "evidence": evidence, "description": description}


def test_a_handover_the_model_dates_moves_the_task_too(db, local_embedder, fake, llm_settings, settings):
    """ "Raj, can you take the quotes? By the 30th?": one change of the model's that hands the task over and gives
    it a new date changes both its owner and its due date, each with the evidence."""
    kickoff, update = sorted((FIXTURES / "timeline").iterdir())[:2]
    quotes = {**located(6, "get three quotes from removal companies by January 23", "Get three quotes."),
              "assignee": "Mark", "due_date": "2026-01-23", "status": "open"}  # fmt: skip
    handover = {**located(1, "Raj, could you take the removal quotes over, by the 30th?", "unused"), "item": "E1",
                "change": "reassigned", "new_owner": "Raj Patel", "new_due_date": "2026-01-30"}  # fmt: skip
    fake.chat_responses += [
        {"decisions": [], "risks": [], "opportunities": [], "tasks": [quotes], "changes": []},
        {"decisions": [], "risks": [], "opportunities": [], "tasks": [], "changes": [handover]},
    ]  # fmt: skip
    extract_with_model(db, kickoff, settings, llm_settings, local_embedder)
    extract_with_model(db, update, settings, llm_settings, local_embedder)

    assert db.execute("SELECT assignee, due_date, status FROM tasks").fetchall() == [("Raj Patel", date(2026, 1, 30), "open")]
    changes = db.execute("SELECT change, new_value, target_kind, evidence FROM knowledge_changes ORDER BY change")
    assert changes.fetchall() == [
        ("reassigned", "Raj Patel", "task", handover["evidence"]),
        ("rescheduled", "2026-01-30", "task", handover["evidence"]),
    ]


def kickoff_offline_beside(db, settings, local_embedder, notes):
    """The office move's kickoff and ``notes`` ingested, segmented and embedded; the kickoff extracted offline."""
    kickoff = sorted((FIXTURES / "timeline").iterdir())[0]
    for path in (kickoff, notes):
        ingest_file(db, path, local_embedder, project="office", meeting_date=date.fromisoformat(path.name[:10]))
    for stage in ("segment", "embed"):
        run_named_stage(db, settings, stage, 10, embedder=local_embedder)
    run_named_stage(db, settings, "extract", 1, embedder=local_embedder)


def test_with_a_model_a_change_listed_in_a_notes_section_is_still_found(
    db, local_embedder, fake, llm_settings, settings, tmp_path
):
    """Lines under "## Action items" are items as listed, which the model never reads: their change statements
    ("- Mark Feld sent the three removal quotes") are found offline, and link like any other."""
    notes = tmp_path / "2026-01-19-office-move-notes.md"
    notes.write_text(
        "# Office move notes\n\nThe landlord sent the floor plans.\n\n"
        "## Action items\n\n- Mark Feld sent the three removal quotes to Ines on Friday.\n"
    )
    kickoff_offline_beside(db, settings, local_embedder, notes)
    fake.chat_responses.append({"decisions": [], "risks": [], "opportunities": [], "tasks": [], "changes": []})

    assert run_named_stage(db, llm_settings, "extract", 10, embedder=local_embedder).processed == 1

    [request] = chat_requests(fake)
    # listed: not the model's to read, only shown as recorded
    prompt = request["body"]["messages"][1]["content"]
    assert "sent the three removal quotes" not in prompt.split("\nSegment: ")[1]
    assert "already lists under its own headings (do not extract them again):\n- task: Mark Feld sent the" in prompt
    linked = db.execute("SELECT change, method, target_kind, evidence FROM knowledge_changes WHERE target_id IS NOT NULL")
    assert linked.fetchall() == [("done", "rules", "task", "- Mark Feld sent the three removal quotes to Ines on Friday.")]
    quotes = db.execute("SELECT status FROM tasks WHERE description ILIKE '%%quotes%%'").fetchall()
    assert quotes == [("done",)]


def test_with_a_model_a_decision_listed_in_notes_links_to_what_the_model_says_it_replaces(
    db, local_embedder, fake, llm_settings, settings, tmp_path
):
    """Decisions under "## Decisions" are taken as listed; the model is asked, in one call, which earlier decision
    each replaces (L1 -> E1). One it leaves out replaces nothing, even where it shares words with an earlier one."""
    notes = tmp_path / "2026-02-09-office-move-notes.md"
    notes.write_text(
        "# Office move notes\n\nThe landlord sent the floor plans.\n\n## Decisions\n\n"
        "- The move to Harbor Street is on March 16, two weeks later.\n"
        "- The furniture budget of forty thousand euros also pays for the kitchen.\n"
    )
    kickoff_offline_beside(db, settings, local_embedder, notes)
    earlier = db.execute("SELECT description FROM decisions ORDER BY start_char").fetchall()
    assert [d for (d,) in earlier] == [
        "We decided to move into the Harbor Street office on March 2.",
        "We decided the furniture budget is forty thousand euros, including the meeting room chairs.",
    ]
    fake.chat_responses += [
        {"decisions": [], "risks": [], "opportunities": [], "tasks": [], "changes": []},  # the notes' other lines
        {"links": [{"listed": "L1", "supersedes": "E1"}, {"listed": "L9", "supersedes": "E2"}]},  # L9: no such line
    ]

    assert run_named_stage(db, llm_settings, "extract", 10, embedder=local_embedder).processed == 1

    extraction, linking = chat_requests(fake)
    prompt = extraction["body"]["messages"][1]["content"]
    assert "Harbor Street is on March 16" not in prompt.split("\nSegment: ")[1]  # numbered lines: the notes' prose
    assert "\n- decision: The move to Harbor Street is on March 16, two weeks later.\n" in prompt  # shown as recorded
    assert linking["body"]["response_format"]["json_schema"]["name"] == "ListedDecisionLinks"
    assert linking["body"]["messages"][1]["content"] == (
        "Earlier items of this project that are still current or open:\n"
        "E1 (decision, 2026-01-12): We decided to move into the Harbor Street office on March 2.\n"
        "E2 (decision, 2026-01-12): We decided the furniture budget is forty thousand euros, including the meeting "
        "room chairs.\n\n"
        "Meeting date: 2026-02-09\n"
        "Decisions these notes list:\n"
        "L1: The move to Harbor Street is on March 16, two weeks later.\n"
        "L2: The furniture budget of forty thousand euros also pays for the kitchen."
    )  # only decisions: risks and tasks are not what a listed decision replaces
    rows = db.execute("SELECT id, description, status, superseded_by, stated FROM decisions ORDER BY id").fetchall()
    march_2, budget, march_16, kitchen = rows
    assert (march_2[2], march_2[3]) == ("superseded", march_16[0])
    assert march_16[4] == {"supersedes": march_2[1]}
    assert (budget[2], budget[3]) == ("current", None)
    assert kitchen[4] == {"supersedes": None}  # the model's answer: it replaces nothing
