"""The tools' arguments: their JSON schemas are what OpenAI, Anthropic, Bedrock and MCP clients see."""

from __future__ import annotations

from datetime import date
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from rag.knowledge import NAMES, labelled_names
from rag.validation import (
    MAX_QUERY_CHARS,
    PROJECT_PATTERN,
    SearchType,
    expand_types,
    non_blank,
    valid_project_ids,
    valid_unicode,
)


class ToolArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


TypeChoice = SearchType | Literal["all"]


class SearchArgs(ToolArgs):
    query: Annotated[str, BeforeValidator(valid_unicode)] = Field(
        min_length=1, max_length=MAX_QUERY_CHARS, description="what to look for, in natural language"
    )
    types: list[TypeChoice] = Field(
        default_factory=lambda: ["chunk"], min_length=1, max_length=len(NAMES) + 1,
        description=f"{labelled_names()}; all: every type in one ranked list",
    )  # fmt: skip
    project_ids: list[str] = Field(default_factory=list, max_length=20, description="only these projects (optional)")
    top_k: int = Field(default=6, ge=1, le=20, description="how many results")

    @field_validator("query")
    @classmethod
    def _query(cls, value: str) -> str:
        return non_blank(value, "query")

    @field_validator("types")
    @classmethod
    def _types(cls, values: list[str]) -> list[str]:
        return expand_types(values)

    @field_validator("project_ids")
    @classmethod
    def _projects(cls, values: list[str]) -> list[str]:
        return valid_project_ids(values)


class ContextArgs(SearchArgs):
    max_tokens: int = Field(default=1500, ge=200, le=6000, description="budget of the context")


class NoArgs(ToolArgs):
    pass


class MeetingsArgs(ToolArgs):
    project_id: str | None = Field(default=None, pattern=PROJECT_PATTERN, description="one project (optional)")
    limit: int = Field(default=10, ge=1, le=50)


class TasksArgs(MeetingsArgs):
    limit: int = Field(default=20, ge=1, le=50)
    assignee: str | None = Field(default=None, max_length=200, description="only this person's tasks (their name)")
    due_after: date | None = Field(default=None, description="only tasks due on or after this day (YYYY-MM-DD)")
    due_before: date | None = Field(default=None, description="only tasks due on or before this day (YYYY-MM-DD)")
    status: Literal["open", "done", "cancelled", "blocked", "any"] = Field(
        default="open", description="the tasks' status after every meeting (default open; any: every task)"
    )


class ChangesArgs(ToolArgs):
    project_id: str | None = Field(
        default=None, pattern=PROJECT_PATTERN, description="the project (optional when the request has one project)"
    )
    since: date = Field(description="first meeting date, inclusive (YYYY-MM-DD)")
    until: date | None = Field(default=None, description="last meeting date, inclusive (default: no end)")
    limit: int = Field(default=20, ge=1, le=50, description="at most this many items per list")


class BriefArgs(ToolArgs):
    project_id: str | None = Field(
        default=None, pattern=PROJECT_PATTERN, description="the project (optional when the request has one project)"
    )
    days: int = Field(default=14, ge=1, le=366, description="what changed in the meetings of the last N days")


class ReadDocumentArgs(ToolArgs):
    document_id: str = Field(
        pattern=r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
        description="a document_id from a search result or a meeting",
    )
    start_turn: int | None = Field(default=None, ge=0, description="first turn of a transcript (inclusive)")
    end_turn: int | None = Field(default=None, ge=0, description="last turn of a transcript (inclusive)")
    start_char: int | None = Field(default=None, ge=0, description="or: first character of the document's text")
    end_char: int | None = Field(default=None, ge=0, description="or: end character (exclusive)")
