"""The request's time limit (504), and the Bedrock Converse provider through botocore's Stubber."""

from __future__ import annotations

import json

import pytest

from tests.api.conftest import call


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class SlowModel:
    """Answers, but only after the request's whole time has gone."""

    name = "stub/slow"

    def __init__(self, clock: Clock, seconds: float):
        self.clock, self.seconds, self.timeouts = clock, seconds, []

    def complete(self, system, messages, tools, *, timeout, allow_tools):
        from rag.ask.providers import ModelTurn

        self.timeouts.append(timeout)
        self.clock.now += self.seconds
        return ModelTurn("An answer that came too late.")


def test_past_the_requests_time_limit_ask_raises_and_model_calls_get_only_the_time_left():
    from rag.ask.answer import AskTimeout, ask
    from rag.ask.types import Question
    from rag.config import Settings

    settings = Settings(ask_timeout_seconds=20, ask_model_timeout_seconds=12)
    clock = Clock()
    model = SlowModel(clock, 30)

    with pytest.raises(AskTimeout, match="no answer within 20 s"):
        ask(None, settings, "acme", Question("battery?"), model=model, clock=clock)
    assert model.timeouts == [12]  # min(model limit, time left minus the extractive reserve of 4 s) = min(12, 16)


def test_the_api_answers_504_timeout_when_the_limit_is_exceeded(corpus, monkeypatch):
    from rag.config import get_settings

    monkeypatch.setenv("RAG_ASK_TIMEOUT_SECONDS", "0.001")
    get_settings.cache_clear()

    status, body = call("POST", "/v1/ask", {"question": "What did we decide about the battery?"})

    assert status == 504
    assert body["error"]["code"] == "timeout" and "retry" in body["error"]["message"]


def test_bedrock_converse_tool_calls_are_run_and_cited(corpus, database_url, local_embedder):
    import boto3
    from botocore.stub import ANY, Stubber

    from rag.ask.answer import ask
    from rag.ask.providers import BedrockChat
    from rag.ask.types import Question, ToolCall, Usage
    from rag.config import Settings
    from rag.store.connection import connect

    settings = Settings(llm_provider="bedrock", bedrock_chat_model="anthropic.claude-test")
    client = boto3.client("bedrock-runtime", region_name="us-east-1")
    stub = Stubber(client)
    tool_use = {"toolUseId": "tu-1", "name": "search", "input": {"query": "battery decision", "top_k": 2}}
    stub.add_response(
        "converse",
        {"output": {"message": {"role": "assistant", "content": [{"text": "Searching."}, {"toolUse": tool_use}]}},
         "stopReason": "tool_use", "usage": {"inputTokens": 120, "outputTokens": 30, "totalTokens": 150},
         "metrics": {"latencyMs": 10}},
        {"modelId": "anthropic.claude-test", "system": ANY, "inferenceConfig": ANY,
         "messages": [{"role": "user", "content": [{"text": "What did we decide about the battery?"}]}],
         "toolConfig": ANY},
    )  # fmt: skip
    stub.add_response(
        "converse",
        {"output": {"message": {"role": "assistant", "content": [{"text": "Rechargeable with USB-C [1] [5]."}]}},
         "stopReason": "end_turn", "usage": {"inputTokens": 900, "outputTokens": 12, "totalTokens": 912},
         "metrics": {"latencyMs": 10}},
        {"modelId": "anthropic.claude-test", "system": ANY, "inferenceConfig": ANY, "messages": ANY, "toolConfig": ANY},
    )  # fmt: skip
    request = Question("What did we decide about the battery?", ("remote",))

    with stub, connect(database_url) as conn:
        reply = ask(conn, settings, "acme", request, model=BedrockChat(settings, client=client), embedder=local_embedder)
        stub.assert_no_pending_responses()

    assert reply.mode == "llm" and reply.text == "Rechargeable with USB-C [1]."
    assert reply.usage == Usage(input_tokens=1020, output_tokens=42)
    assert [c.n for c in reply.citations] == [1]
    assert reply.tool_calls == (ToolCall("search", {"query": "battery decision", "top_k": 2}, result_count=2, error=None),)


def test_converse_messages_carry_tool_use_and_results_in_bedrocks_shape():
    from rag.ask.providers import BedrockChat, ToolCall

    messages = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [ToolCall("a", "search", '{"query": "x"}'), ToolCall("b", "list_projects", "{}")],
        },
        {"role": "tool", "tool_call_id": "a", "name": "search", "content": json.dumps({"results": []})},
        {"role": "tool", "tool_call_id": "b", "name": "list_projects", "content": "{}"},
    ]

    converse = BedrockChat.to_converse(messages)

    assert converse == [
        {"role": "user", "content": [{"text": "q"}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "a", "name": "search", "input": {"query": "x"}}},
                                          {"toolUse": {"toolUseId": "b", "name": "list_projects", "input": {}}}]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "a", "content": [{"text": '{"results": []}'}]}},
                                     {"toolResult": {"toolUseId": "b", "content": [{"text": "{}"}]}}]},
    ]  # fmt: skip


def ask_bedrock(client, database_url, local_embedder) -> dict:
    """``ask`` about the battery in project remote, with Bedrock Converse through ``client``."""
    from rag.ask.answer import ask
    from rag.ask.providers import BedrockChat
    from rag.ask.types import Question
    from rag.config import Settings
    from rag.store.connection import connect

    settings = Settings(llm_provider="bedrock", bedrock_chat_model="anthropic.claude-test")
    request = Question("What did we decide about the battery?", ("remote",))
    with connect(database_url) as conn:
        return ask(conn, settings, "acme", request, model=BedrockChat(settings, client=client), embedder=local_embedder)


def converse_reply(content: list[dict], stop_reason: str = "end_turn") -> dict:
    return {"output": {"message": {"role": "assistant", "content": content}}, "stopReason": stop_reason,
            "usage": {"inputTokens": 100, "outputTokens": 5, "totalTokens": 105}, "metrics": {"latencyMs": 10}}  # fmt: skip


@pytest.mark.parametrize(
    "reply",
    [
        converse_reply([]),
        converse_reply([{"reasoningContent": {"reasoningText": {"text": "Let me think about batteries."}}}]),
        converse_reply([{"toolUse": {"toolUseId": "tu-1", "name": "search", "input": "battery"}}], "tool_use"),
        converse_reply([{"toolUse": {"toolUseId": "tu-1", "name": "drop_tables", "input": {}}}], "tool_use"),
    ],
    ids=["no-content", "reasoning-only", "input-not-an-object", "unknown-tool"],
)
def test_a_converse_reply_without_a_usable_answer_degrades_to_an_extractive_answer(corpus, database_url, local_embedder, reply):
    import boto3
    from botocore.stub import Stubber

    client = boto3.client("bedrock-runtime", region_name="us-east-1")
    stub = Stubber(client)
    stub.add_response("converse", reply)

    with stub:
        answer = ask_bedrock(client, database_url, local_embedder)
        stub.assert_no_pending_responses()

    assert (answer.mode, answer.degraded) == ("extractive", "malformed_model_output")
    assert answer.text.startswith("The most relevant passages:") and len(answer.citations) == 3


@pytest.mark.parametrize(
    ("code", "status"),
    [("ThrottlingException", 429), ("ModelErrorException", 424), ("AccessDeniedException", 403), ("ValidationException", 400)],
)
def test_a_converse_error_degrades_to_an_extractive_answer(corpus, database_url, local_embedder, code, status):
    import boto3
    from botocore.stub import Stubber

    client = boto3.client("bedrock-runtime", region_name="us-east-1")
    stub = Stubber(client)
    stub.add_client_error("converse", service_error_code=code, service_message=f"scripted {code}", http_status_code=status)

    with stub:
        answer = ask_bedrock(client, database_url, local_embedder)

    assert (answer.mode, answer.degraded) == ("extractive", "model_unavailable")
    assert len(answer.citations) == 3


@pytest.fixture
def bedrock_endpoint():
    """An HTTP endpoint answering each Converse call 200 with the next queued (content type, body), as it is."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    replies: list[tuple[str, bytes]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            content_type, body = replies.pop(0)
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", replies
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("application/json", b"not json"),
        ("text/html", b"<html><head><title>502 Bad Gateway</title></head><body>proxy</body></html>"),
        ("application/json", b'{"output": {"message": {"role": "assistant", "content": "Rechargeable."}}}'),
        ("application/json", b'{"output": {"message": {"role": "assistant", "content": [{"text": 5}]}}}'),
        ("application/json", b'{"output": {"message": {"role": "assistant", "content": [{"toolUse": {"name": 3}}]}}}'),
        ("application/json", b"[1, 2]"),
    ],
    ids=["not-json", "html", "content-not-a-list", "text-not-text", "tool-use-without-fields", "json-array"],
)
def test_a_200_body_that_is_not_a_converse_response_degrades(corpus, database_url, local_embedder, bedrock_endpoint,
                                                            content_type, body):  # fmt: skip
    import boto3
    from botocore.config import Config

    url, replies = bedrock_endpoint
    replies.append((content_type, body))
    client = boto3.client(
        "bedrock-runtime", region_name="us-east-1", endpoint_url=url, aws_access_key_id="AKIDTEST",
        aws_secret_access_key="test-secret", config=Config(retries={"max_attempts": 1}),
    )  # fmt: skip

    answer = ask_bedrock(client, database_url, local_embedder)

    assert (answer.mode, answer.degraded) == ("extractive", "malformed_model_output")
    assert answer.text.startswith("The most relevant passages:") and len(answer.citations) == 3
    assert not replies  # the model was called once


def test_a_converse_call_is_made_once_within_the_time_it_is_given(monkeypatch):
    """No retry past the call's time: a retried throttle or timeout would spend the answer's time twice."""
    from rag.ask.providers import BedrockChat, ModelUnavailable
    from rag.config import Settings
    from tests.artifact.fake_bedrock import FakeBedrock

    for name, value in {"AWS_ACCESS_KEY_ID": "AKIDTEST", "AWS_SECRET_ACCESS_KEY": "test-secret"}.items():
        monkeypatch.setenv(name, value)
    with FakeBedrock() as bedrock:
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", bedrock.url)
        throttled = (429, b'{"message": "Too many requests, please wait."}', "ThrottlingException")
        bedrock.converse_responses += [throttled, throttled]
        chat = BedrockChat(Settings(llm_provider="bedrock", aws_region="us-east-1"))

        with pytest.raises(ModelUnavailable, match="ThrottlingException"):
            chat.complete("Answer.", [{"role": "user", "content": "battery?"}], [], timeout=5, allow_tools=False)

    assert len(bedrock.requests) == 1
