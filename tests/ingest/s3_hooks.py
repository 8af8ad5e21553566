"""The moto S3 client with hooks into an invocation's windows (what another invocation does meanwhile)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class S3WithHook:
    """Runs ``after_get`` once an object has been read, ``after_head`` once its current version was checked.

    Each hook runs once: the window of one slow invocation, in which another one acts.
    """

    def __init__(self, client: Any):
        self._client = client
        self.after_get: Callable[[], None] | None = None
        self.after_head: Callable[[], None] | None = None

    def get_object(self, **kwargs: Any) -> dict[str, Any]:
        response = self._client.get_object(**kwargs)
        hook, self.after_get = self.after_get, None
        if hook:
            hook()
        return response  # type: ignore[no-any-return]

    def head_object(self, **kwargs: Any) -> dict[str, Any]:
        response = self._client.head_object(**kwargs)
        hook, self.after_head = self.after_head, None
        if hook:
            hook()
        return response  # type: ignore[no-any-return]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)
