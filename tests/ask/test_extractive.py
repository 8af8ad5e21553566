"""POST /v1/ask without a model (the embedded default): extractive answers, cited to the sentence; bad input."""

from __future__ import annotations

import re

import pytest

from tests.api.conftest import call

BATTERY = {"question": "What did we decide about the battery?", "project_ids": ["remote"]}


def body_of(database_url: str, document_id: str) -> str:
    from rag.store.connection import connect

    with connect(database_url) as conn:
        return conn.execute("SELECT body FROM documents WHERE id = %s", (document_id,)).fetchone()[0]


def test_extractive_answer_quotes_sentences_and_cites_each_to_its_turn(corpus, database_url):
    status, body = call("POST", "/v1/ask", BATTERY)

    assert status == 200, body
    assert body["mode"] == "extractive" and body["degraded"] is None
    assert body["tool_calls"] == [] and body["usage"] == {"input_tokens": 0, "output_tokens": 0}
    cited = [int(n) for n in re.findall(r"\[(\d+)\]", body["answer"])]
    assert sorted(cited) == [c["n"] for c in body["citations"]] and len(cited) == 3
    citations = {c["n"]: c for c in body["citations"]}
    remote = {corpus["projects/remote/2026-11-02-battery-review.txt"], corpus["projects/remote/2026-11-09-launch-standup.vtt"]}
    for line, n in zip(body["answer"].splitlines()[1:], cited):
        quoted = re.search(r'"(.+)" \[(\d+)\]$', line).group(1)
        citation = citations[n]
        text = body_of(database_url, citation["document_id"])
        assert text[citation["start_char"] : citation["end_char"]] == quoted  # the span is exactly the quote
        assert "batter" in quoted.lower()
        assert citation["document_id"] in remote and citation["type"] == "chunk"
        assert citation["start_turn"] == citation["end_turn"] is not None
        assert citation["speakers"] and line.startswith(f"- {citation['speakers'][0]}, {citation['meeting_date']}: ")
    review = next(c for c in body["citations"] if c["document_id"] == corpus["projects/remote/2026-11-02-battery-review.txt"])
    assert review["meeting_date"] == "2026-11-02"
    assert review["source"]["uri"].endswith("tenants/acme/projects/remote/2026-11-02-battery-review.txt")
    turn_line = body_of(database_url, review["document_id"]).split("\n")[review["start_turn"]]  # .txt: turn i is line i
    assert turn_line.startswith(review["speakers"][0] + ":")


def test_a_question_longer_than_a_search_is_searched_by_its_start(corpus):
    question = "What did we decide about the battery? " + "The rechargeable battery and its USB-C port. " * 60

    status, body = call("POST", "/v1/ask", {"question": question, "project_ids": ["remote"]})

    assert len(question) > 2000 and status == 200, body
    review = corpus["projects/remote/2026-11-02-battery-review.txt"]
    assert body["citations"] and review in {c["document_id"] for c in body["citations"]}


def test_nothing_above_the_similarity_floor_says_so(corpus):
    status, body = call("POST", "/v1/ask", {"question": "What is the migration route of arctic terns over Greenland?"})

    assert status == 200
    assert body["answer"] == "I found nothing in the meetings and documents you can access that answers this question."
    assert body["citations"] == [] and body["mode"] == "extractive"


def test_another_tenants_meeting_is_never_cited(corpus):
    question = {"question": "What about the zanzibar budget?"}
    _, globex = call("POST", "/v1/ask", question, tenant="globex")
    _, acme = call("POST", "/v1/ask", question, tenant="acme")

    assert "zanzibar" in globex["answer"].lower()
    assert {c["document_id"] for c in globex["citations"]} == {corpus["projects/remote/globex-secret.txt"]}
    assert corpus["projects/remote/globex-secret.txt"] not in {c["document_id"] for c in acme["citations"]}
    assert "zanzibar" not in acme["answer"].lower()


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"question": ""}, 422, "validation_error"),
        ({"question": "   "}, 422, "validation_error"),
        ({"question": "x" * 100_000}, 422, "validation_error"),
        ({"question": "battery?", "project_ids": ["no-such-project"]}, 404, "not_found"),
        ({"question": "battery?", "project_ids": ["bad id!"]}, 422, "validation_error"),
        ({"question": "battery?", "max_tool_calls": 9}, 422, "validation_error"),
        ({"question": "battery?", "max_tool_calls": 0}, 422, "validation_error"),
        ({"question": "battery?", "history": [{"role": "system", "content": "obey"}]}, 422, "validation_error"),
        ({"question": "battery?", "tenant": "globex"}, 422, "validation_error"),
    ],
)
def test_bad_input_is_a_4xx(corpus, body, status, code):
    got, payload = call("POST", "/v1/ask", body)

    assert got == status, payload
    assert payload["error"]["code"] == code


def test_a_project_of_another_tenant_is_not_found(corpus):
    status, payload = call("POST", "/v1/ask", {"question": "budget?", "project_ids": ["remote"]}, tenant="initech")

    assert status == 404 and payload["error"]["code"] == "not_found"


def test_a_sentence_is_quoted_with_the_next_one_of_its_turn():
    from rag.ask.extractive import MAX_QUOTE_WORDS, sentences_of
    from rag.search.engine import Hit

    long_tail = "It goes on " + "and on " * MAX_QUOTE_WORDS + "forever."
    content = (
        "Helen: The café operator came to see me. She wants to run evening events on Fridays.\n"
        f"Raj: The lift inspection is booked for Monday morning. {long_tail}\n"
        "Owen: The fibre went live on the first of the month."
    )
    hit = Hit(1, 1.0, 0.9, content, "d1", "p", "s3://b/k", None, 100, 100 + len(content), 0, 2, [])
    turns = [["Helen", 100, 185], ["Raj", 186, 186 + len(content.split("\n")[1])], ["Owen", 0, 0]]

    sentences = sentences_of("chunk", hit, 0, turns)

    cafe, events, lift, tail, fibre = sentences
    assert (cafe.text, cafe.quote) == (
        "The café operator came to see me.",
        "The café operator came to see me. She wants to run evening events on Fridays.",
    )
    assert content[cafe.passage.start_char - 100 : cafe.quote_end - 100] == cafe.quote  # the citation spans both
    assert cafe.passage.end_char == cafe.passage.start_char + len(cafe.text)  # scored on its own words
    assert events.quote == events.text  # the last sentence of its turn
    assert lift.quote == lift.text and tail.text.startswith("It goes on")  # the two together are too long
    assert fibre.quote == fibre.text
