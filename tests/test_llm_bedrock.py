"""rag.llm's structured outputs with llm provider bedrock: Converse requests and replies through botocore's Stubber."""

from __future__ import annotations

from typing import Literal

import boto3
import pytest
from botocore.stub import Stubber
from pydantic import BaseModel, Field

from rag.config import Settings
from rag.errors import LLMOutputError, TransientError
from rag.llm import structured_completion

MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"


class Owner(BaseModel):
    name: str
    team: str | None


class Proposal(BaseModel):
    kind: Literal["task", "risk"]
    owners: list[Owner] = Field(description="who owns it")
    due: str | None


@pytest.fixture
def stub(monkeypatch):
    client = boto3.client("bedrock-runtime", region_name="eu-west-1", aws_access_key_id="k", aws_secret_access_key="s")
    monkeypatch.setattr("rag.llm_bedrock._client", lambda region, timeout, retries: client)
    with Stubber(client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def settings() -> Settings:
    return Settings(llm_provider="bedrock", bedrock_chat_model=MODEL, llm_max_output_tokens=2048)


def reply(tool_input, *, name="Proposal", stop="tool_use", text=None):
    content = ([{"text": text}] if text else []) + [{"toolUse": {"toolUseId": "tooluse_1", "name": name, "input": tool_input}}]
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": {"inputTokens": 900, "outputTokens": 120, "totalTokens": 1020},
        "metrics": {"latencyMs": 850},
    }


def ask():
    return structured_completion(settings(), system="Extract.", user="[0] Dana: I'll do it by Friday.", response_model=Proposal)


def test_the_model_must_call_the_tool_named_after_the_answer_whose_schema_is_the_answers(stub):
    from rag.llm_bedrock import tool_schema

    tool = {"name": "Proposal", "description": "Record the answer as Proposal.", "inputSchema": {"json": tool_schema(Proposal)}}
    expected = {  # botocore checks the request against the service model before the Stubber answers
        "modelId": MODEL,
        "system": [{"text": "Extract."}],
        "messages": [{"role": "user", "content": [{"text": "[0] Dana: I'll do it by Friday."}]}],
        "inferenceConfig": {"temperature": 0, "maxTokens": 2048},
        "toolConfig": {"tools": [{"toolSpec": tool}], "toolChoice": {"tool": {"name": "Proposal"}}},
    }
    stub.add_response(
        "converse", reply({"kind": "task", "owners": [{"name": "Dana", "team": None}], "due": "2026-03-06"}), expected
    )

    answer = ask()

    assert answer == Proposal(kind="task", owners=[Owner(name="Dana", team=None)], due="2026-03-06")


def test_the_tool_schema_has_no_references_and_keeps_every_definition():
    from rag.llm_bedrock import tool_schema

    schema = tool_schema(Proposal)

    assert "$defs" not in schema and "$ref" not in str(schema)
    owner = schema["properties"]["owners"]["items"]
    assert owner["properties"]["name"] == {"title": "Name", "type": "string"} and owner["required"] == ["name", "team"]
    assert schema["properties"]["owners"]["description"] == "who owns it"
    assert schema["properties"]["kind"]["enum"] == ["task", "risk"] and schema["required"] == ["kind", "owners", "due"]


def test_text_beside_the_tool_call_is_ignored_and_a_quoted_array_is_read_as_one(stub):
    quoted = '[{"name": "Dana", "team": "Firmware"}]'
    stub.add_response("converse", reply({"kind": "task", "owners": quoted, "due": '["x"]'}, text="Here is the answer."))

    answer = ask()
    assert answer.owners == [Owner(name="Dana", team="Firmware")] and answer.due == '["x"]'  # a text field stays text


@pytest.mark.parametrize(
    ("response", "error"),
    [
        (reply({"kind": "task"}, stop="max_tokens"), "cut at its token limit"),
        (reply({"kind": "task"}, stop="content_filtered"), "withheld by its content filter"),
        (reply({"kind": "task"}, stop="guardrail_intervened"), "withheld by a guardrail"),
        (reply({"kind": "task"}, name="Other"), "returned no Proposal"),
        (reply({"kind": "idea", "owners": [], "due": None}), "does not fit Proposal"),
        (reply({"kind": "task", "owners": "[not json", "due": None}), "does not fit Proposal"),
        (reply({"kind": "task", "owners": "[" * 100_000 + "]" * 100_000, "due": None}), "does not fit Proposal"),
        (
            {
                "output": {"message": {"role": "assistant", "content": [{"text": "I'd rather not."}]}},
                "stopReason": "end_turn",
                "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
                "metrics": {"latencyMs": 1},
            },
            "returned no Proposal",
        ),
    ],
)
def test_an_answer_that_is_not_the_tools_input_is_an_output_error(stub, response, error):
    stub.add_response("converse", response)

    with pytest.raises(LLMOutputError, match=error):
        ask()


@pytest.mark.parametrize(
    ("code", "raised"),
    [
        ("ThrottlingException", TransientError),
        ("ServiceUnavailableException", TransientError),
        ("ModelNotReadyException", TransientError),
        ("AccessDeniedException", LLMOutputError),  # model access not granted: every retry is refused the same way
        ("ValidationException", LLMOutputError),
        ("ResourceNotFoundException", LLMOutputError),
    ],
)
def test_what_can_succeed_later_is_transient_and_a_refusal_is_not(stub, code, raised):
    stub.add_client_error("converse", service_error_code=code, service_message=f"scripted {code}", http_status_code=400)

    with pytest.raises(raised, match=f"Bedrock {MODEL}.*scripted {code}"):
        ask()
