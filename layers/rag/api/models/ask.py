"""``/v1/ask``: the question with its scope and history, and the cited answer."""

from __future__ import annotations

from dataclasses import asdict
from datetime import date
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field, field_validator

from rag.api.models.search import Source
from rag.validation import PlainText, SearchType, Strict, non_blank, valid_project_ids, valid_unicode

if TYPE_CHECKING:
    from rag.ask.types import Answer, Question

MAX_QUESTION_CHARS = 4000
MAX_HISTORY_MESSAGES = 20
MAX_HISTORY_CHARS = 8000


class ChatMessage(Strict):
    role: Literal["user", "assistant"]
    content: PlainText = Field(max_length=MAX_HISTORY_CHARS)


class AskRequest(Strict):
    question: Annotated[str, BeforeValidator(valid_unicode)] = Field(
        min_length=1, max_length=MAX_QUESTION_CHARS, description="the question, in natural language"
    )
    project_ids: list[str] = Field(
        default_factory=list, max_length=100, description="limit to these projects; tools can narrow, never widen"
    )
    history: list[ChatMessage] = Field(
        default_factory=list, max_length=MAX_HISTORY_MESSAGES, description="earlier turns of the conversation"
    )
    max_tool_calls: int = Field(default=4, ge=1, le=8, description="bound on the tool calls the model may make")

    @field_validator("question")
    @classmethod
    def _question_not_blank(cls, value: str) -> str:
        return non_blank(value, "question")

    @field_validator("project_ids")
    @classmethod
    def _project_ids(cls, values: list[str]) -> list[str]:
        return valid_project_ids(values)

    def question_asked(self) -> Question:
        """The answering layer's form of this request (``rag.ask.types``)."""
        from rag.ask.types import ChatTurn, Question

        history = tuple(ChatTurn(m.role, m.content) for m in self.history)
        return Question(self.question, tuple(self.project_ids), history, self.max_tool_calls)


class Citation(BaseModel):
    n: int = Field(description="the number the answer cites as [n]")
    id: str = Field(description="the passage's citation id: the same passage has the same id in every request")
    type: SearchType
    document_id: str
    source: Source
    start_turn: int | None = None
    end_turn: int | None = None
    start_char: int
    end_char: int
    speakers: list[str] = Field(default_factory=list)
    meeting_date: date | None = None


class ToolCallRecord(BaseModel):
    name: str
    arguments: dict[str, Any]
    result_count: int
    error: str | None = None


class Usage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0


class AskResponse(BaseModel):
    answer: str
    mode: Literal["llm", "extractive"]
    citations: list[Citation]
    tool_calls: list[ToolCallRecord]
    usage: Usage
    took_ms: float
    degraded: str | None = Field(
        default=None, description="why a configured model did not answer (timeout, malformed output): extractive instead"
    )

    @classmethod
    def of(cls, answer: Answer) -> AskResponse:
        """The response for an answer of the answering layer."""
        return cls(
            answer=answer.text, mode=answer.mode, citations=[Citation(**c.record()) for c in answer.citations],
            tool_calls=[ToolCallRecord(**asdict(call)) for call in answer.tool_calls], usage=Usage(**asdict(answer.usage)),
            took_ms=answer.took_ms, degraded=answer.degraded,
        )  # fmt: skip
