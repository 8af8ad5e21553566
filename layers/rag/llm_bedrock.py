"""Structured outputs from Bedrock's Converse API, for the backfill's segment and extract stages.

The answer is the input of one tool the model is made to call (``toolChoice`` ``tool``, which Anthropic Claude 3 and
later and Amazon Nova models take), its schema the pydantic model's with references written out in place: tool
schemas are JSON Schema, and not every model resolves ``$ref``. The input is validated by pydantic as the OpenAI
path's content is. Throttling, a service or model not ready, a timeout and an unreachable endpoint (after botocore's
standard retries) raise ``TransientError``; a request the service refuses (no model access, an unknown model, a
bad request) and an answer that is not the tool's input raise ``LLMOutputError``. ``boto3`` is imported here only.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from rag.errors import LLMOutputError, TransientError

if TYPE_CHECKING:
    from rag.config import Settings

Response = TypeVar("Response", bound=BaseModel)

# What can succeed later (the Converse API's error codes); every other refusal answers this request the same way again.
TRANSIENT_CODES = frozenset(
    {"ThrottlingException", "ServiceUnavailableException", "InternalServerException", "ModelNotReadyException",
     "ModelTimeoutException", "ServiceQuotaExceededException"}
)  # fmt: skip
WITHHELD = {"guardrail_intervened": "withheld by a guardrail", "content_filtered": "withheld by its content filter"}


def converse_structured(settings: Settings, *, system: str, user: str, response_model: type[Response]) -> Response:
    """The model's answer as ``response_model``, from one Converse call that must call the tool of that name."""
    from botocore.exceptions import BotoCoreError, ClientError
    from botocore.parsers import ResponseParserError

    model = settings.llm.bedrock_chat_model
    name = f"Bedrock {model}"
    tool = response_model.__name__
    request = {
        "modelId": model,
        "system": [{"text": system}],
        "messages": [{"role": "user", "content": [{"text": user}]}],
        "inferenceConfig": {"temperature": 0, "maxTokens": settings.llm.max_output_tokens},
        "toolConfig": {
            "tools": [{"toolSpec": {"name": tool, "description": f"Record the answer as {tool}.",
                                    "inputSchema": {"json": tool_schema(response_model)}}}],
            "toolChoice": {"tool": {"name": tool}},
        },
    }  # fmt: skip
    region = settings.embedding.bedrock_region or settings.aws.region
    try:
        response = _client(region, settings.llm.timeout_seconds, settings.llm.max_retries).converse(**request)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code in TRANSIENT_CODES:
            raise TransientError(f"{name} unavailable after retries: {exc}") from exc
        raise LLMOutputError(f"{name} rejected the request: {exc}") from exc
    except (BotoCoreError, ResponseParserError) as exc:  # unreachable, timed out, a body that is no response (a proxy's)
        raise TransientError(f"{name} unavailable after retries: {exc}") from exc
    return tool_answer(name, response, response_model)


def tool_answer(name: str, response: Any, response_model: type[Response]) -> Response:
    """The input of the response's call of the ``response_model`` tool, validated; ``LLMOutputError`` otherwise."""
    import pydantic

    stop = response.get("stopReason") if isinstance(response, dict) else None
    if stop in ("max_tokens", "model_context_window_exceeded"):
        raise LLMOutputError(f"{name} answer was cut at its token limit ({stop})")
    if stop in WITHHELD:
        raise LLMOutputError(f"{name} answer was {WITHHELD[stop]}")
    blocks = ((response.get("output") or {}).get("message") or {}).get("content") if isinstance(response, dict) else None
    tool = response_model.__name__
    calls = [b["toolUse"] for b in blocks or [] if isinstance(b, dict) and isinstance(b.get("toolUse"), dict)]
    answer = next((call.get("input") for call in calls if call.get("name") == tool), None)
    if not isinstance(answer, dict):
        raise LLMOutputError(f"{name} returned no {tool} (stop reason {stop!r})")
    try:
        return response_model.model_validate(_unquoted(answer, response_model))
    except pydantic.ValidationError as exc:
        raise LLMOutputError(f"{name} answer does not fit {tool}: {exc}") from exc


def _unquoted(answer: dict[str, Any], response_model: type[BaseModel]) -> dict[str, Any]:
    """The answer with a list or object the model wrote as JSON text read as one: models given a nested schema
    sometimes quote a whole array (``"tasks": "[{...}]"``). Only fields that hold a list or an object are read; text
    that does not parse (or nests deeper than the parser goes) stays text, for pydantic to refuse."""
    fixed = dict(answer)
    for field, info in response_model.model_fields.items():
        value = fixed.get(field)
        if isinstance(value, str) and _holds_structure(info.annotation):
            try:
                fixed[field] = json.loads(value)
            except (ValueError, RecursionError):
                pass
    return fixed


def _holds_structure(annotation: Any) -> bool:
    """Whether a field annotated ``annotation`` holds a list, a dict or a model (``X | None`` included)."""
    from typing import get_args, get_origin

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return True
    return get_origin(annotation) in (list, dict) or any(_holds_structure(arg) for arg in get_args(annotation))


def tool_schema(response_model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema with every ``$ref`` replaced by the definition it names (the models are not
    recursive)."""
    schema = response_model.model_json_schema()
    definitions = schema.pop("$defs", {})

    def resolved(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                target = definitions[node["$ref"].rpartition("/")[2]]
                return resolved({**target, **{k: v for k, v in node.items() if k != "$ref"}})
            return {key: resolved(value) for key, value in node.items()}
        if isinstance(node, list):
            return [resolved(value) for value in node]
        return node

    return resolved(schema)  # type: ignore[no-any-return]


@lru_cache(maxsize=4)
def _client(region: str, timeout: float, max_retries: int) -> Any:
    """One client per configuration and warm process; botocore retries throttling and 5xx (standard mode)."""
    import boto3
    from botocore.config import Config

    config = Config(
        read_timeout=timeout,
        connect_timeout=min(timeout, 10),
        retries={"mode": "standard", "total_max_attempts": max_retries + 1},
    )
    return boto3.client("bedrock-runtime", region_name=region, config=config)
