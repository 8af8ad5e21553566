"""Chat models that call tools: OpenAI-compatible chat completions, and Bedrock's Converse API.

Both take the conversation in one neutral form (OpenAI's roles: ``user``, ``assistant``
with ``tool_calls``, ``tool`` with ``tool_call_id``) and return a ``ModelTurn``. Each call
gets the time left to the request (no retries past it): a call that runs out raises
``ModelTimeout``, a provider error ``ModelUnavailable``; the caller degrades to an
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
        self.name = f"openai/{settings.llm_model}"

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
            completion = client.chat.completions.create(model=self.settings.llm_model, messages=wire, temperature=0, **options)
        except openai.APITimeoutError as exc:
            raise ModelTimeout(f"{self.name} did not answer within {timeout:.1f} s") from exc
        except openai.APIError as exc:
            raise ModelUnavailable(f"{self.name}: {exc}") from exc
        if not completion.choices:
            raise MalformedOutput(f"{self.name} returned no choice")
        message = completion.choices[0].message
        calls: list[ToolCall] = []
        for call in message.tool_calls or []:
            function = getattr(call, "function", None)
            if function is None:
                raise MalformedOutput(f"{self.name} returned a tool call of type {getattr(call, 'type', '?')!r}")
            calls.append(ToolCall(call.id or f"call_{len(calls)}", function.name or "", function.arguments or ""))
        usage = completion.usage
        return ModelTurn(
            content=message.content or "", tool_calls=calls,
            input_tokens=usage.prompt_tokens if usage else 0, output_tokens=usage.completion_tokens if usage else 0,
        )  # fmt: skip


class BedrockChat:
    """Bedrock's Converse API with tools (``RAG_BEDROCK_CHAT_MODEL``)."""

    def __init__(self, settings: Settings, client: Any = None):
        self.settings = settings
        self.name = f"bedrock/{settings.bedrock_chat_model}"
        self._client = client

    def client(self, timeout: float) -> Any:
        if self._client is not None:
            return self._client
        import boto3
        from botocore.config import Config

        config = Config(read_timeout=timeout, connect_timeout=min(timeout, 5), retries={"max_attempts": 1})
        return boto3.client(
            "bedrock-runtime", region_name=self.settings.bedrock_region or self.settings.aws_region, config=config
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

        request: dict[str, Any] = {
            "modelId": self.settings.bedrock_chat_model,
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
        try:
            blocks = response["output"]["message"]["content"]
        except (KeyError, TypeError) as exc:
            raise MalformedOutput(f"{self.name} returned no message") from exc
        text = "".join(b["text"] for b in blocks if "text" in b)
        calls = [
            ToolCall(b["toolUse"].get("toolUseId", f"call_{i}"), b["toolUse"].get("name", ""), json.dumps(b["toolUse"].get("input")))
            for i, b in enumerate(blocks) if "toolUse" in b
        ]  # fmt: skip
        usage = response.get("usage") or {}
        return ModelTurn(text, calls, int(usage.get("inputTokens", 0)), int(usage.get("outputTokens", 0)))


def chat_model(settings: Settings) -> ChatModel | None:
    """The configured model, or None: the embedded default answers extractively."""
    if settings.llm_provider == "openai":
        return OpenAIChat(settings)
    if settings.llm_provider == "bedrock":
        return BedrockChat(settings)
    return None
