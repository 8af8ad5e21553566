"""A small client of the local query API (``rag up`` serves it on 127.0.0.1:RAG_LOCAL_API_PORT).

The CLI talks to the API over HTTP rather than calling the handler in-process so that what it shows
is what any other client gets: the same authentication, validation and errors.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rag.config import Settings

TIMEOUT_SECONDS = 60


class ApiError(RuntimeError):
    """The API answered with an error status, or could not be reached; the message says which."""


def post(settings: Settings, path: str, body: dict[str, Any], *, api_key: str | None = None) -> dict[str, Any]:
    """POST ``body`` as JSON to ``path`` (e.g. ``/v1/search``); ``api_key`` defaults to the first of RAG_API_KEYS."""
    key = api_key or next(iter(settings.api.key_tenants), "")
    request = urllib.request.Request(
        f"http://127.0.0.1:{settings.local.api_port}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            result: dict[str, Any] = json.load(response)
            return result
    except urllib.error.HTTPError as exc:
        raise ApiError(f"HTTP {exc.code}: {exc.read().decode(errors='replace')}") from exc
    except urllib.error.URLError as exc:
        raise ApiError(f"the API is not reachable on 127.0.0.1:{settings.local.api_port} ({exc.reason}): run `rag up`") from exc


def get(settings: Settings, path: str, *, api_key: str | None = None) -> str:
    """GET ``path`` (with its query string): the body as text (JSON or, e.g., a Markdown brief)."""
    key = api_key or next(iter(settings.api.key_tenants), "")
    request = urllib.request.Request(
        f"http://127.0.0.1:{settings.local.api_port}{path}", headers={"Authorization": f"Bearer {key}"}, method="GET"
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            return str(response.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        raise ApiError(f"HTTP {exc.code}: {exc.read().decode(errors='replace')}") from exc
    except urllib.error.URLError as exc:
        raise ApiError(f"the API is not reachable on 127.0.0.1:{settings.local.api_port} ({exc.reason}): run `rag up`") from exc
