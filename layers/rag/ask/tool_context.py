"""What a tool runs with: the caller's tenant and the request's projects, which a tool may narrow and never widen."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rag.ask.citations import Citations

if TYPE_CHECKING:
    import psycopg

    from rag.config import Settings
    from rag.embedding.base import Embedder
    from rag.store.replica import WriterSource


class ToolError(Exception):
    """A tool call the model can correct (bad scope, unknown document): its message is the tool's result."""


@dataclass
class ToolContext:
    conn: psycopg.Connection
    settings: Settings
    tenant_id: str
    project_ids: tuple[str, ...] = ()  # the request's scope; empty: every project of the tenant
    citations: Citations = field(default_factory=Citations)
    redact: Callable[[str], str] = staticmethod(lambda text: text)
    writer: WriterSource | None = None  # where searches write when ``conn`` is a read replica (rag.store.replica)
    _embedder: Embedder | None = None

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            from rag.store.embedding_space import active_embedder

            self._embedder = active_embedder(self.conn, self.settings)
        return self._embedder

    def narrow(self, asked: list[str] | tuple[str, ...]) -> tuple[str, ...]:
        """The projects a tool may read: those asked for within the request's, or the request's."""
        if not asked:
            return self.project_ids
        if not self.project_ids:
            return tuple(asked)
        kept = tuple(p for p in asked if p in self.project_ids)
        if not kept:
            raise ToolError(f"project(s) {', '.join(asked)} are outside this request's projects: {', '.join(self.project_ids)}")
        return kept

    def in_scope(self, project_id: str) -> bool:
        return not self.project_ids or project_id in self.project_ids


@dataclass(frozen=True)
class ToolResult:
    data: dict[str, Any]  # what the model reads (JSON)
    count: int  # items found (0: nothing)

    def text(self) -> str:
        return json.dumps(self.data, default=str, ensure_ascii=False)
