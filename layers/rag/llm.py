"""The chat model client shared by the backfill, the reranker and /v1/ask.

Structured outputs from an OpenAI-compatible chat model, validated by pydantic. The client is
the one the OpenAI embedder uses (``rag.embedding.openai.openai_client``: key from Secrets
Manager or ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``); the SDK retries 429 and 5xx with backoff.
The reply's body is read and checked here (``first_choice``), not by the SDK, which parses
without validating: a 200 whose body is not a chat completion (not JSON, a proxy's HTML page,
JSON of another shape) would come back as a string or an object with holes.
``openai`` is imported lazily, only on the paths that call the model. With llm provider ``bedrock``
``structured_completion`` asks Bedrock's Converse API instead (``rag.llm_bedrock``).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from rag.errors import LLMOutputError, RagError, TransientError

if TYPE_CHECKING:
    from rag.config import Settings

Response = TypeVar("Response", bound=BaseModel)

_clients: dict[tuple[Any, ...], Any] = {}

BODY_EXCERPT_CHARS = 80  # of a reply that is not a chat completion, in its error: enough to tell a proxy's page


def chat_client(settings: Settings) -> Any:
    """One client per configuration and warm process."""
    from rag.embedding.openai import openai_client

    key = (
        settings.embedding.openai_base_url,
        settings.embedding.openai_api_key_secret,
        settings.llm.max_retries,
        settings.llm.timeout_seconds,
    )
    if key not in _clients:
        _clients[key] = openai_client(settings, max_retries=settings.llm.max_retries, timeout=settings.llm.timeout_seconds)
    return _clients[key]


class NotAChatCompletion(RagError):
    """A 200 reply whose body is not a chat completion: the server (or a proxy before it) is at fault, not the prompt."""


@dataclass(frozen=True)
class ChatChoice:
    """The first choice of a chat completion, its shape checked."""

    message: dict[str, Any]  # the assistant message; its "content" is text or None
    finish_reason: str | None
    usage: dict[str, Any]


def first_choice(body: str) -> ChatChoice:
    """The first choice of the chat completion ``body``; any other body raises ``NotAChatCompletion``."""
    try:
        completion = json.loads(body)
    except (ValueError, RecursionError) as exc:  # json.JSONDecodeError; nesting deeper than the parser goes
        raise NotAChatCompletion(f"answered with a body that is not JSON ({exc}): {_excerpt(body)}") from exc
    choices = completion.get("choices") if isinstance(completion, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise NotAChatCompletion(f"answered with a body that is not a chat completion (no choices): {_excerpt(body)}")
    message = choices[0].get("message")
    if not isinstance(message, dict) or not isinstance(message.get("content"), str | None):
        raise NotAChatCompletion(f"answered with a choice that holds no assistant message: {_excerpt(body)}")
    finish_reason = choices[0].get("finish_reason")
    usage = completion.get("usage")
    return ChatChoice(
        message, finish_reason if isinstance(finish_reason, str) else None, usage if isinstance(usage, dict) else {}
    )


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


def _excerpt(body: str) -> str:
    return repr(body[:BODY_EXCERPT_CHARS] + ("..." if len(body) > BODY_EXCERPT_CHARS else ""))


def structured_completion(settings: Settings, *, system: str, user: str, response_model: type[Response]) -> Response:
    """The model's answer parsed into ``response_model`` (JSON schema structured output, strict; with llm provider
    bedrock, ``rag.llm_bedrock``'s tool input).

    An unreachable, throttling or failing server (after the SDK's retries), or one whose replies are
    not chat completions (asked again as often as the SDK retries a 5xx), raises ``TransientError``:
    the same call can succeed later. An answer that is not the ``response_model`` asked for (prose,
    another schema, cut at the token limit, filtered, refused) raises ``LLMOutputError``: it is the
    answer to this input.
    """
    if settings.llm.provider == "bedrock":
        from rag.llm_bedrock import converse_structured

        return converse_structured(settings, system=system, user=user, response_model=response_model)
    import openai

    name = f"LLM {settings.llm.model}"
    client = chat_client(settings)
    attempts = settings.llm.max_retries + 1
    for attempt in range(1, attempts + 1):
        try:
            # The SDK builds the strict JSON schema from response_model; the body is read here (first_choice).
            raw = client.chat.completions.with_raw_response.parse(
                model=settings.llm.model,
                messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                response_format=response_model,
                temperature=0,
            )
            choice = first_choice(raw.text)
            break
        except (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError) as exc:
            raise TransientError(f"{name} unavailable after retries: {exc}") from exc
        except openai.APIStatusError as exc:
            raise LLMOutputError(f"{name} rejected the request: HTTP {exc.status_code} {exc.message}") from exc
        except NotAChatCompletion as exc:
            if attempt == attempts:
                raise TransientError(f"{name} {exc} (asked {_times(attempts)})") from exc
            time.sleep(min(0.5 * 2 ** (attempt - 1), 8.0))  # the SDK's backoff for a 5xx
    return parsed_answer(name, choice, response_model)


def parsed_answer(name: str, choice: ChatChoice, response_model: type[Response]) -> Response:
    """The structured output of ``choice`` as ``response_model``; ``LLMOutputError`` if it is not one."""
    import pydantic

    refusal = choice.message.get("refusal")
    if isinstance(refusal, str) and refusal:
        raise LLMOutputError(f"{name} refused: {refusal}")
    if choice.finish_reason == "length":
        raise LLMOutputError(f"{name} answer was cut at its token limit")
    if choice.finish_reason == "content_filter":
        raise LLMOutputError(f"{name} answer was withheld by its content filter")
    content = choice.message.get("content")
    if not content:
        raise LLMOutputError(f"{name} returned no {response_model.__name__}")
    try:
        return response_model.model_validate_json(content)
    except pydantic.ValidationError as exc:
        raise LLMOutputError(f"{name} answer does not fit {response_model.__name__}: {exc}") from exc


def numbered_units(lines: list[str], first_index: int = 0, max_chars: int = 1500) -> str:
    """``[i] text`` lines the model refers back to by number (long lines cut: they only need locating).

    A line's own line breaks (a sentence running over list items) become spaces: each number is one line.
    """
    return "\n".join(f"[{first_index + i}] {' '.join(line.split())[:max_chars]}" for i, line in enumerate(lines))
