"""Bedrock's Rerank API as the reranker: the request it receives, the order of its scores, its failures.

botocore's Stubber checks each request against the service model and stands in for Bedrock's replies; the
timeout is a real socket that never answers, read by a client built the way the reranker builds its own.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import replace

import boto3
import pytest
from botocore.stub import Stubber

from rag.config import Settings
from rag.search import bedrock_rerank
from rag.search.bedrock_rerank import BedrockReranker, model_arn, rerank_client
from rag.search.engine import Hit
from rag.search.rerank import PASSAGE_CHARS, get_reranker, rerank, take_fallbacks

REGION = "us-west-2"
COHERE_ARN = "arn:aws:bedrock:us-west-2::foundation-model/cohere.rerank-v3-5:0"
QUESTION = "What did we decide about the cutover?"


def hit(number: int, content: str) -> tuple[str, Hit]:
    return "chunk", Hit(
        id=number, score=1.0 - number / 10, similarity=0.5, content=content, document_id=f"doc-{number}",
        project_id="p", source_uri=f"s3://b/{number}.txt", title=None, start_char=0, end_char=len(content),
        start_turn=number, end_turn=number, speakers=["Ana"],
    )  # fmt: skip


FUSED = [
    hit(0, "Ana: the budget review moves to May."),
    hit(1, "Ben: we talked about the cutover plan at length. " + "x" * 3000),  # longer than a passage may be
    hit(2, "Ana: Then we decided: cutover stays on Thursday."),
]


def settings(**overrides: object) -> Settings:
    return Settings(reranker="bedrock", bedrock_region=REGION, **overrides)  # type: ignore[arg-type]


def expected_request(passages: list[str], model: str = COHERE_ARN) -> dict:
    return {
        "queries": [{"type": "TEXT", "textQuery": {"text": QUESTION}}],
        "sources": [
            {"type": "INLINE", "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": p[:PASSAGE_CHARS]}}}
            for p in passages
        ],
        "rerankingConfiguration": {
            "type": "BEDROCK_RERANKING_MODEL",
            "bedrockRerankingConfiguration": {"modelConfiguration": {"modelArn": model}, "numberOfResults": len(passages)},
        },
    }


def reply(*scores: tuple[int, float]) -> dict:
    """A Rerank reply as Bedrock sends it: best first."""
    ordered = sorted(scores, key=lambda s: -s[1])
    return {"results": [{"index": index, "relevanceScore": score} for index, score in ordered]}


@pytest.fixture
def client() -> Iterator[tuple[object, Stubber]]:
    client = boto3.client("bedrock-agent-runtime", region_name=REGION)
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


@pytest.fixture(autouse=True)
def no_fallbacks_left_over() -> None:
    take_fallbacks()


def test_the_api_receives_the_question_and_every_passage_cut_to_its_bound(client) -> None:
    client, stubber = client
    passages = [h.content for _, h in FUSED]
    stubber.add_response("rerank", reply((2, 0.91), (1, 0.40), (0, 0.02)), expected_request(passages))

    grades = BedrockReranker(settings(), client).grades(QUESTION, passages)

    assert grades == [0.02, 0.40, 0.91]
    assert len(expected_request(passages)["sources"][1]["inlineDocumentSource"]["textDocument"]["text"]) == PASSAGE_CHARS


def test_hits_are_ordered_and_scored_by_relevance_score(client) -> None:
    client, stubber = client
    stubber.add_response("rerank", reply((2, 0.91), (1, 0.40), (0, 0.02)), expected_request([h.content for _, h in FUSED]))

    ranked = rerank(BedrockReranker(settings(), client), QUESTION, FUSED, top_k=2)

    assert [h.id for _, h in ranked] == [2, 1]
    assert [h.score for _, h in ranked] == [0.91, 0.40]
    assert take_fallbacks() == 0


def test_a_passage_the_reply_leaves_out_goes_after_the_scored_ones(client) -> None:
    client, stubber = client
    stubber.add_response("rerank", reply((1, 0.7)), expected_request([h.content for _, h in FUSED]))

    ranked = rerank(BedrockReranker(settings(), client), QUESTION, FUSED, top_k=3)

    assert [h.id for _, h in ranked] == [1, 0, 2]  # the left-out ones keep their fused order
    assert [h.score for _, h in ranked] == [0.7, 0.0, 0.0]


def test_amazon_rerank_is_named_by_its_arn_in_the_configured_region(client) -> None:
    client, stubber = client
    arn = "arn:aws:bedrock:eu-central-1::foundation-model/amazon.rerank-v1:0"
    reranker = BedrockReranker(
        Settings(reranker="bedrock", bedrock_rerank_model="amazon.rerank-v1:0", aws_region="eu-central-1"), client
    )
    stubber.add_response("rerank", reply((0, 0.5), (1, 0.6)), expected_request(["a", "b"], model=arn))

    assert reranker.region == "eu-central-1"
    assert reranker.grades(QUESTION, ["a", "b"]) == [0.5, 0.6]


@pytest.mark.parametrize(
    ("region", "arn"),
    [
        ("us-east-1", "arn:aws:bedrock:us-east-1::foundation-model/cohere.rerank-v3-5:0"),
        ("us-gov-west-1", "arn:aws-us-gov:bedrock:us-gov-west-1::foundation-model/cohere.rerank-v3-5:0"),
        ("cn-north-1", "arn:aws-cn:bedrock:cn-north-1::foundation-model/cohere.rerank-v3-5:0"),
    ],
)
def test_the_model_arn_carries_the_regions_partition(region: str, arn: str) -> None:
    assert model_arn("cohere.rerank-v3-5:0", region) == arn


def test_candidates_beyond_one_call_go_in_further_calls_and_compare_across_them(client, monkeypatch) -> None:
    client, stubber = client
    monkeypatch.setattr(bedrock_rerank, "SOURCES_PER_CALL", 2)
    fused = [*FUSED, hit(3, "Cy: Thursday it is."), hit(4, "Ana: lunch?")]
    passages = [h.content for _, h in fused]
    stubber.add_response("rerank", reply((0, 0.1), (1, 0.3)), expected_request(passages[0:2]))
    stubber.add_response("rerank", reply((0, 0.9), (1, 0.8)), expected_request(passages[2:4]))
    stubber.add_response("rerank", reply((0, 0.05)), expected_request(passages[4:5]))

    ranked = rerank(BedrockReranker(settings(), client), QUESTION, fused, top_k=5)

    assert [h.id for _, h in ranked] == [2, 3, 1, 0, 4]


@pytest.mark.parametrize("code", ["ThrottlingException", "ServiceQuotaExceededException", "AccessDeniedException"])
def test_an_error_keeps_the_fused_order_and_is_counted(client, code: str, caplog) -> None:
    client, stubber = client
    stubber.add_client_error("rerank", service_error_code=code, http_status_code=429 if "Throttl" in code else 400)

    ranked = rerank(BedrockReranker(settings(), client), QUESTION, FUSED, top_k=2)

    assert ranked == FUSED[:2]
    assert take_fallbacks() == 1
    assert take_fallbacks() == 0  # taken once
    assert any(code in r.getMessage() and "fused order" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    "body",
    [
        {"results": [{"index": 0, "relevanceScore": 0.9}, {"index": 7, "relevanceScore": 0.5}]},  # not a passage sent
        {"results": [{"index": 1, "relevanceScore": 0.9}, {"index": 1, "relevanceScore": 0.5}]},  # the same one twice
        {"results": []},  # nothing scored
    ],
    ids=["index-outside", "index-twice", "no-results"],
)
def test_a_reply_that_does_not_answer_the_request_keeps_the_fused_order(client, body: dict) -> None:
    client, stubber = client
    stubber.add_response("rerank", body, expected_request([h.content for _, h in FUSED]))

    ranked = rerank(BedrockReranker(settings(), client), QUESTION, FUSED, top_k=3)

    assert ranked == FUSED
    assert take_fallbacks() == 1


@pytest.fixture
def silent_endpoint(monkeypatch) -> Iterator[list[socket.socket]]:
    """Bedrock's endpoint replaced by a socket that accepts connections and never answers; yields those it took."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                accepted.append(server.accept()[0])
            except OSError:  # closed at teardown
                return

    threading.Thread(target=accept, daemon=True).start()
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME", f"http://127.0.0.1:{server.getsockname()[1]}")
    rerank_client.cache_clear()
    yield accepted
    rerank_client.cache_clear()
    server.close()
    for connection in accepted:
        connection.close()


def test_a_silent_endpoint_is_given_up_after_one_retry_and_the_fused_order_stands(silent_endpoint) -> None:
    # The reranker's own client (its timeouts and retries), pointed at a socket that never answers.
    reranker = get_reranker(settings(rerank_timeout_seconds=0.4))
    assert isinstance(reranker, BedrockReranker)

    ranked = rerank(reranker, QUESTION, FUSED, top_k=3)

    assert ranked == FUSED
    assert take_fallbacks() == 1
    assert len(silent_endpoint) == 2  # the first attempt and botocore's one retry, then the fused order
    config = rerank_client(REGION, 0.4).meta.config
    assert (config.read_timeout, config.connect_timeout) == (0.2, 0.2)  # half of rerank_timeout_seconds each


def test_a_reranker_setting_of_none_or_llm_is_not_bedrocks() -> None:
    assert get_reranker(Settings(reranker="none")) is None
    assert type(get_reranker(Settings(reranker="llm"))).__name__ == "LLMReranker"


def test_choosing_bedrock_loads_no_boto3_until_a_search_reranks() -> None:
    code = (
        "import sys\n"
        "from rag.config import Settings\n"
        "from rag.search.rerank import get_reranker\n"
        "reranker = get_reranker(Settings(reranker='bedrock'))\n"
        "print(type(reranker).__name__, 'boto3' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["BedrockReranker", "False"]


def test_scores_above_one_are_capped(client) -> None:
    client, stubber = client
    stubber.add_response("rerank", reply((0, 1.7), (1, 0.2), (2, 0.1)), expected_request([h.content for _, h in FUSED]))

    ranked = rerank(BedrockReranker(settings(), client), QUESTION, FUSED, top_k=1)

    assert [replace(h, score=0) for _, h in ranked] == [replace(FUSED[0][1], score=0)]
    assert ranked[0][1].score == 1.0


def test_a_botocore_without_rerank_keeps_the_fused_order_and_says_why(caplog) -> None:
    # An older runtime's boto3 has bedrock-agent-runtime but not its Rerank operation.
    ranked = rerank(BedrockReranker(settings(), client=object()), QUESTION, FUSED, top_k=3)

    assert ranked == FUSED
    assert take_fallbacks() == 1
    assert any("has no bedrock-agent-runtime Rerank" in r.getMessage() for r in caplog.records)
