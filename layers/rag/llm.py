"""The chat model client shared by the backfill, the reranker and /v1/ask.

Structured outputs from an OpenAI-compatible chat model, validated by pydantic. The client is
the one the OpenAI embedder uses (``rag.embedding.openai.openai_client``: key from Secrets
Manager or ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``); the SDK retries 429 and 5xx with backoff.
``openai`` is imported lazily, only on the paths that call the model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar, cast

from pydantic import BaseModel

from rag.errors import LLMOutputError, TransientError

if TYPE_CHECKING:
    from rag.config import Settings

Response = TypeVar("Response", bound=BaseModel)

_clients: dict[tuple[Any, ...], Any] = {}


def chat_client(settings: Settings) -> Any:
    """One client per configuration and warm process."""
    from rag.embedding.openai import openai_client

    key = (settings.openai_base_url, settings.openai_api_key_secret, settings.llm_max_retries, settings.llm_timeout_seconds)
    if key not in _clients:
        _clients[key] = openai_client(settings, max_retries=settings.llm_max_retries, timeout=settings.llm_timeout_seconds)
    return _clients[key]


def structured_completion(settings: Settings, *, system: str, user: str, response_model: type[Response]) -> Response:
    """The model's answer parsed into ``response_model`` (JSON schema structured output, strict)."""
    import openai
    import pydantic

    try:
        completion = chat_client(settings).chat.completions.parse(
            model=settings.llm_model,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
            response_format=response_model,
            temperature=0,
        )
    except (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError) as exc:
        raise TransientError(f"LLM {settings.llm_model} unavailable after retries: {exc}") from exc
    except openai.APIStatusError as exc:
        raise LLMOutputError(f"LLM {settings.llm_model} rejected the request: HTTP {exc.status_code} {exc.message}") from exc
    except (pydantic.ValidationError, openai.LengthFinishReasonError, openai.ContentFilterFinishReasonError) as exc:
        raise LLMOutputError(f"LLM {settings.llm_model} answer does not fit {response_model.__name__}: {exc}") from exc
    message = completion.choices[0].message
    if message.refusal:
        raise LLMOutputError(f"LLM {settings.llm_model} refused: {message.refusal}")
    if message.parsed is None:
        raise LLMOutputError(f"LLM {settings.llm_model} returned no {response_model.__name__}")
    return cast(Response, message.parsed)


def numbered_units(lines: list[str], first_index: int = 0, max_chars: int = 1500) -> str:
    """``[i] text`` lines the model refers back to by number (long lines cut: they only need locating)."""
    return "\n".join(f"[{first_index + i}] {line[:max_chars]}" for i, line in enumerate(lines))
