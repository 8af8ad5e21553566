"""Chat models that call tools: OpenAI-compatible chat completions, and Bedrock's Converse API.

Both take the conversation in one neutral form (OpenAI's roles: ``user``, ``assistant``
with ``tool_calls``, ``tool`` with ``tool_call_id``) and return a ``ModelTurn``. Each call
gets the time left to the request (no retries past it): a call that runs out raises
``ModelTimeout``, a provider error ``ModelUnavailable``, a reply that is not the API's
(not JSON, an HTML page, JSON of another shape) ``MalformedOutput``: the caller degrades to an
extractive answer. ``openai`` and ``boto3`` are imported only here, on these paths.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from rag.ask.tools import Tool
    from rag.config import Settings


class ModelFailure(Exception):
    """The model did not give a usable answer; ``kind`` says how (the response's ``degraded``)."""

    kind = "model_error"


class ModelTimeout(ModelFailure):
    kind = "model_timeout"


class ModelUnavailable(ModelFailure):
    kind = "model_unavailable"


class MalformedOutput(ModelFailure):
    kind = "malformed_model_output"


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text, as the model wrote it (may be malformed)


@dataclass
class ModelTurn:
    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0


class ChatModel(Protocol):
    name: str

    def complete(
        self, system: str, messages: Sequence[dict[str, Any]], tools: Sequence[Tool], *, timeout: float, allow_tools: bool
    ) -> ModelTurn: ...


class OpenAIChat:
    """Any OpenAI-compatible ``/chat/completions`` with function tools (``OPENAI_BASE_URL``)."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.name = f"openai/{settings.llm.model}"

    def complete(
        self, system: str, messages: Sequence[dict[str, Any]], tools: Sequence[Tool], *, timeout: float, allow_tools: bool
    ) -> ModelTurn:
        import openai

        from rag.llm import chat_client

        wire: list[dict[str, Any]] = [{"role": "system", "content": system}]
        for message in messages:
            if message.get("tool_calls"):
                wire_calls = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                              for c in message["tool_calls"]]  # fmt: skip
                wire.append({"role": "assistant", "content": message.get("content") or None, "tool_calls": wire_calls})
            elif message["role"] == "tool":
                wire.append({"role": "tool", "tool_call_id": message["tool_call_id"], "content": message["content"]})
            else:
                wire.append({"role": message["role"], "content": message["content"]})
        options: dict[str, Any] = {}
        if tools:
            options = {"tools": [t.openai() for t in tools], "tool_choice": "auto" if allow_tools else "none"}
        client = chat_client(self.settings).with_options(timeout=timeout, max_retries=0)
        try:
            # The raw body, parsed and checked by rag.llm.first_choice: the SDK parses without validating, and turns a
            # body of another shape into objects with holes (or, for an HTML page, a string).
            raw = client.chat.completions.with_raw_response.create(
                model=self.settings.llm.model, messages=wire, temperature=0, **options
            )
            body = raw.text
        except openai.APITimeoutError as exc:
            raise ModelTimeout(f"{self.name} did not answer within {timeout:.1f} s") from exc
        except openai.APIError as exc:
            raise ModelUnavailable(f"{self.name}: {exc}") from exc
        return openai_turn(self.name, body)


def openai_turn(name: str, body: str) -> ModelTurn:
    """The first choice of the chat completion ``body``; a body of any other shape is ``MalformedOutput``."""
    from rag.llm import NotAChatCompletion, first_choice

    try:
        choice = first_choice(body)
    except NotAChatCompletion as exc:
        raise MalformedOutput(f"{name} {exc}") from exc
    message = choice.message
    wire_calls = message.get("tool_calls") or []
    if not isinstance(wire_calls, list):
        raise MalformedOutput(f"{name} answered with tool_calls that are not a list")
    calls: list[ToolCall] = []
    for call in wire_calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            kind = call.get("type") if isinstance(call, dict) else type(call).__name__
            raise MalformedOutput(f"{name} returned a tool call of type {kind!r}")
        call_id, function_name, arguments = call.get("id"), function.get("name"), function.get("arguments")
        if not (isinstance(call_id, str | None) and isinstance(function_name, str | None) and isinstance(arguments, str | None)):
            raise MalformedOutput(f"{name} returned a tool call whose id, name or arguments are not text")
        calls.append(ToolCall(call_id or f"call_{len(calls)}", function_name or "", arguments or ""))
    usage = choice.usage
    return ModelTurn(
        message.get("content") or "", calls, _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
    )


class BedrockChat:
    """Bedrock's Converse API with tools (``RAG_BEDROCK_CHAT_MODEL``)."""

    def __init__(self, settings: Settings, client: Any = None):
        self.settings = settings
        self.name = f"bedrock/{settings.llm.bedrock_chat_model}"
        self._client = client

    def client(self, timeout: float) -> Any:
        if self._client is not None:
            return self._client
        import boto3
        from botocore.config import Config

        config = Config(read_timeout=timeout, connect_timeout=min(timeout, 5), retries={"total_max_attempts": 1})
        return boto3.client(
            "bedrock-runtime", region_name=self.settings.embedding.bedrock_region or self.settings.aws.region, config=config
        )

    @staticmethod
    def to_converse(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Neutral messages as Converse's: tool results (one user message per run of them) and toolUse blocks."""
        out: list[dict[str, Any]] = []
        for message in messages:
            if message["role"] == "tool":
                block = {"toolResult": {"toolUseId": message["tool_call_id"], "content": [{"text": message["content"]}]}}
                if out and out[-1]["role"] == "user" and "toolResult" in out[-1]["content"][0]:
                    out[-1]["content"].append(block)
                else:
                    out.append({"role": "user", "content": [block]})
            elif message.get("tool_calls"):
                content: list[dict[str, Any]] = [{"text": message["content"]}] if message.get("content") else []
                content += [{"toolUse": {"toolUseId": c.id, "name": c.name, "input": json.loads(c.arguments)}}
                            for c in message["tool_calls"]]  # fmt: skip
                out.append({"role": "assistant", "content": content})
            else:
                out.append({"role": message["role"], "content": [{"text": message["content"]}]})
        return out

    def complete(
        self, system: str, messages: Sequence[dict[str, Any]], tools: Sequence[Tool], *, timeout: float, allow_tools: bool
    ) -> ModelTurn:
        from botocore.exceptions import BotoCoreError, ClientError, ConnectTimeoutError, ReadTimeoutError
        from botocore.parsers import ResponseParserError

        request: dict[str, Any] = {
            "modelId": self.settings.llm.bedrock_chat_model,
            "system": [{"text": system}],
            "messages": self.to_converse(messages),
            "inferenceConfig": {"temperature": 0, "maxTokens": 1024},
        }
        if tools:  # Converse needs the tool config whenever the conversation holds tool blocks
            request["toolConfig"] = {"tools": [t.bedrock() for t in tools]}
            if allow_tools:
                request["toolConfig"]["toolChoice"] = {"auto": {}}
        try:
            response = self.client(timeout).converse(**request)
        except (ReadTimeoutError, ConnectTimeoutError) as exc:
            raise ModelTimeout(f"{self.name} did not answer within {timeout:.1f} s") from exc
        except (ClientError, BotoCoreError) as exc:
            raise ModelUnavailable(f"{self.name}: {exc}") from exc
        except (ResponseParserError, LookupError, TypeError, ValueError, AttributeError) as exc:
            # How botocore's parser fails on a 200 body of another shape (a proxy's HTML page, other JSON).
            raise MalformedOutput(f"{self.name} answered with a body that is not a Converse response: {exc!r}") from exc
        return converse_turn(self.name, response)


def converse_turn(name: str, response: Any) -> ModelTurn:
    """The text and toolUse blocks of a Converse response; a response of any other shape is ``MalformedOutput``."""
    output = response.get("output") if isinstance(response, dict) else None
    message = output.get("message") if isinstance(output, dict) else None
    blocks = message.get("content") if isinstance(message, dict) else None
    if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
        raise MalformedOutput(f"{name} answered with a body that is not a Converse response (no message)")
    texts: list[str] = []
    calls: list[ToolCall] = []
    for i, block in enumerate(blocks):
        if "text" in block:
            if not isinstance(block["text"], str):
                raise MalformedOutput(f"{name} returned a text block that is not text")
            texts.append(block["text"])
        elif "toolUse" in block:  # other blocks (reasoningContent, ...) are not the answer
            use = block["toolUse"]
            if (
                not isinstance(use, dict)
                or not isinstance(use.get("name"), str)
                or not isinstance(use.get("toolUseId"), str | None)
            ):
                raise MalformedOutput(f"{name} returned a toolUse block without a name")
            calls.append(ToolCall(use.get("toolUseId") or f"call_{i}", use["name"], json.dumps(use.get("input"))))
    usage = response.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    return ModelTurn("".join(texts), calls, _count(usage.get("inputTokens")), _count(usage.get("outputTokens")))


def _count(value: Any) -> int:
    """A token count as the provider reported it; 0 when missing or not a count."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def chat_model(settings: Settings) -> ChatModel | None:
    """The configured model, or None: the embedded default answers extractively."""
    if settings.llm.provider == "openai":
        return OpenAIChat(settings)
    if settings.llm.provider == "bedrock":
        return BedrockChat(settings)
    return None
