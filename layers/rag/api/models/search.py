"""``/v1/search`` and ``/v1/context``: the request (mapped to the search layer's query) and the ranked results."""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Annotated, Any, Literal
from uuid import UUID

from pydantic import BaseModel, BeforeValidator, Field, field_validator, model_validator

from rag.validation import (
    ALL_TYPES,
    MAX_QUERY_CHARS,
    PlainText,
    SearchMode,
    SearchType,
    Strict,
    expand_types,
    non_blank,
    valid_project_ids,
    valid_unicode,
)

if TYPE_CHECKING:
    from rag.search.service import SearchQuery


class SearchFilters(Strict):
    date_from: date | None = Field(default=None, description="earliest meeting date (inclusive)")
    date_to: date | None = Field(default=None, description="latest meeting date (inclusive)")
    speakers: list[PlainText] = Field(
        default_factory=list,
        max_length=50,
        description='any of these people: names match any case, a trailing qualifier such as "(PM)" ignored',
    )
    source_prefix: PlainText | None = Field(
        default=None, max_length=1024, description="S3 key prefix, e.g. projects/acme/meetings/2026-"
    )

    @model_validator(mode="after")
    def _dates_in_order(self) -> SearchFilters:
        if self.date_from and self.date_to and self.date_from > self.date_to:
            raise ValueError("date_from is after date_to")
        return self


class SearchRequest(Strict):
    query: Annotated[str, BeforeValidator(valid_unicode)] = Field(
        min_length=1, max_length=MAX_QUERY_CHARS, description="the question, in natural language"
    )
    project_ids: list[str] = Field(default_factory=list, max_length=100, description="limit to these projects")
    document_ids: list[UUID] = Field(default_factory=list, max_length=100, description="limit to these documents")
    filters: SearchFilters | None = None
    types: list[SearchType | Literal["all"]] = Field(
        default_factory=lambda: ["chunk"], min_length=1, max_length=len(ALL_TYPES) + 1,
        description='what to search; "all" is every type, ranked in one list (search_all_knowledge)',
    )  # fmt: skip
    mode: SearchMode = "hybrid"
    top_k: int = Field(default=10, ge=1, le=100)
    threshold: float = Field(default=0.0, ge=-1.0, le=1.0, description="minimum cosine similarity (semantic side)")

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        return non_blank(value, "query")

    def search_query(self, tenant_id: str) -> SearchQuery:
        """The search layer's form of this request for the verified caller's tenant (``rag.search.service``)."""
        from rag.search.engine import SearchScope
        from rag.search.service import SearchQuery

        filters = self.filters or SearchFilters()
        scope = SearchScope(
            tenant_id=tenant_id, project_ids=tuple(self.project_ids), document_ids=tuple(str(d) for d in self.document_ids),
            date_from=filters.date_from, date_to=filters.date_to, speakers=tuple(filters.speakers),
            source_prefix=filters.source_prefix,
        )  # fmt: skip
        return SearchQuery(self.query, scope, tuple(self.types), self.mode, self.top_k, self.threshold)

    @field_validator("types")
    @classmethod
    def _expand_all(cls, values: list[str]) -> list[str]:
        return expand_types(values)

    @field_validator("project_ids")
    @classmethod
    def _project_ids(cls, values: list[str]) -> list[str]:
        return valid_project_ids(values)


class ContextRequest(SearchRequest):
    max_tokens: int = Field(default=2000, ge=50, le=100_000, description="budget of the context string")


class Source(BaseModel):
    uri: str
    title: str | None = None


class SearchResult(BaseModel):
    id: str
    type: SearchType
    score: float
    similarity: float | None = Field(description="cosine similarity to the query (higher is better)")
    content: str
    document_id: str
    project_id: str
    source: Source
    start_char: int
    end_char: int
    start_turn: int | None = None
    end_turn: int | None = None
    speakers: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


def search_result(type_name: str, hit: Any) -> SearchResult:
    """A search engine hit (``rag.search.engine.Hit``) as the API shows it."""
    return SearchResult(
        id=str(hit.id), type=type_name, score=hit.score, similarity=hit.similarity, content=hit.content,
        document_id=hit.document_id, project_id=hit.project_id, source=Source(uri=hit.source_uri, title=hit.title),
        start_char=hit.start_char, end_char=hit.end_char, start_turn=hit.start_turn, end_turn=hit.end_turn,
        speakers=hit.speakers, metadata=hit.metadata,
    )  # fmt: skip


class SearchResponse(BaseModel):
    results: list[SearchResult]
    took_ms: float


class ContextResponse(BaseModel):
    context: str
    results: list[SearchResult]
    took_ms: float
