"""Citation ids that hold across calls: MCP numbers each tools/call's passages from [1], the id names the passage."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.ask.test_mcp import mcp_session

DOCUMENT = "0b7c1a52-5d1e-4c39-9a55-1f0f2f8f0a11"
LAYER = Path(__file__).resolve().parents[2] / "layers"


def passage(type_name: str = "chunk", start: int = 120, end: int = 980, title: str | None = "Weekly"):
    from rag.ask.citations import Passage

    return Passage(type_name, DOCUMENT, "s3://bucket/weekly.txt", title, start, end)


def test_a_citation_id_is_derived_from_the_passage_and_pinned():
    # Chats keep these ids: the derivation must not change between releases (type, document, character range).
    assert passage().citation_id() == "6208ff1a"
    assert passage(title="Another title").citation_id() == "6208ff1a"  # what the passage is, not how it is shown
    assert passage("task").citation_id() == "9816af1b"
    assert len({passage(start=s, end=e).citation_id() for s, e in [(120, 980), (120, 981), (0, 980), (980, 1900)]}) == 4


def test_a_citation_id_is_the_same_in_another_process():
    code = f"from rag.ask.citations import Passage; print(Passage('chunk', {DOCUMENT!r}, 'x', None, 120, 980).citation_id())"
    out = subprocess.run([sys.executable, "-c", code], env={"PYTHONPATH": str(LAYER), "PYTHONHASHSEED": "7"},
                         capture_output=True, text=True, check=True)  # fmt: skip
    assert out.stdout.strip() == passage().citation_id()


def test_a_tool_result_cites_with_the_local_number_and_the_id_and_the_answer_records_carry_the_id():
    from rag.ask.citations import Citations, cited

    citations = Citations()
    first, again, other = (citations.cite(p) for p in (passage(), passage(), passage(start=0)))
    assert first == again == {"cite_as": "[1]", "citation_id": "6208ff1a"}
    assert other["cite_as"] == "[2]" and other["citation_id"] != first["citation_id"]
    assert [(c.n, c.record()["id"]) for c in cited(citations, [2, 1])] == [(1, "6208ff1a"), (2, other["citation_id"])]


def test_two_mcp_calls_give_an_overlapping_passage_the_same_id_and_different_passages_different_ids(local_api, corpus):
    async def work(client):
        calls = [("search", {"query": "battery remote", "top_k": 10}),
                 ("search", {"query": "what did we decide about the remote battery", "top_k": 10}),
                 ("build_context", {"query": "battery remote", "top_k": 10})]  # fmt: skip
        return [json.loads((await client.call_tool(name, args)).content[0].text) for name, args in calls]

    first, second, context = mcp_session(local_api, "k-acme", work)

    def ids(data):  # (document, span, type) -> (local number, id)
        return {(r["document_id"], r["where"], r["type"]): (r["cite_as"], r["citation_id"]) for r in data["results"]}

    one, two = ids(first), ids(second)
    shared = one.keys() & two.keys()
    assert shared, "the two searches share no passage"
    assert all(one[key][1] == two[key][1] for key in shared)
    every = {**one, **two}
    assert len({cited[1] for cited in every.values()}) == len(every)  # a different passage has a different id
    # Each call numbers from [1]: the local numbers repeat across calls, the ids do not.
    assert {c[0] for c in one.values()} & {c[0] for c in two.values()}
    # build_context's merged passages: each [n] of its text has its id.
    assert set(context["citation_ids"]) == {f"[{n}]" for n in range(1, context["passages"] + 1)}
    assert all(f"{n} " in context["quoted_context"] for n in context["citation_ids"])


def test_v1_ask_citations_carry_the_passages_id_the_same_in_every_request(corpus):
    from rag.ask.citations import Passage
    from tests.api.conftest import call

    question = {"question": "What did we decide about the battery?", "project_ids": ["remote"]}
    replies = [call("POST", "/v1/ask", question) for _ in range(2)]

    assert [status for status, _ in replies] == [200, 200]
    first, second = (body["citations"] for _, body in replies)
    assert first and [c["id"] for c in first] == [c["id"] for c in second]
    for c in first:
        span = Passage(c["type"], c["document_id"], "", None, c["start_char"], c["end_char"])
        assert c["id"] == span.citation_id()
