"""Request and response models of the query API; the OpenAPI document is generated from them."""

from __future__ import annotations

from datetime import date, datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args
from uuid import UUID

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from rag.knowledge import NAMES

if TYPE_CHECKING:
    from rag.search.service import SearchQuery

SearchType = Literal[NAMES]  # type: ignore[valid-type]  # the registry's kinds, an enum in the OpenAPI document
ALL_TYPES: tuple[SearchType, ...] = get_args(SearchType)
TaskStatus = Literal["open", "done", "blocked", "cancelled"]
Change = Literal["done", "cancelled", "reassigned", "rescheduled", "closed"]
SearchMode = Literal["semantic", "keyword", "hybrid"]
ProjectId = str

MAX_QUERY_CHARS = 2000
PROJECT_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"


def _without_nul(value: str) -> str:
    if "\x00" in value:  # PostgreSQL text cannot hold NUL: refuse it here, not with a 500
        raise ValueError("contains a NUL character")
    return value


def _valid_unicode(value: Any) -> Any:
    """A string that UTF-8 (and so PostgreSQL) can hold: JSON's "\\ud800" escape gives a lone surrogate."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(
                f"contains a lone surrogate ({value[exc.start]!r} at character {exc.start}); expected valid Unicode text"
            ) from None
    return value


# Any free text of a request that reaches SQL. The surrogate check runs first: pydantic's own
# check of a constrained str would otherwise answer with a message that does not say why.
PlainText = Annotated[str, BeforeValidator(_valid_unicode), AfterValidator(_without_nul)]


def non_blank(value: str, name: str) -> str:
    """Free text with something in it besides white space (and no NUL), stripped."""
    if not value.strip():
        raise ValueError(f"{name} is empty")
    return _without_nul(value).strip()


def valid_project_ids(values: list[str]) -> list[str]:
    """Project ids in the key's alphabet, duplicates dropped (order kept)."""
    import re

    for value in values:
        if not re.match(PROJECT_PATTERN, value):
            raise ValueError(f"project id {value!r} must be 1-128 letters, digits, '.', '_' or '-'")
    return list(dict.fromkeys(values))


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


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
    query: Annotated[str, BeforeValidator(_valid_unicode)] = Field(
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
        expanded = [t for value in values for t in (ALL_TYPES if value == "all" else (value,))]
        return list(dict.fromkeys(expanded))

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


class Project(BaseModel):
    id: str
    document_count: int
    chunk_count: int
    meeting_count: int
    last_activity: datetime | None = None


class ProjectList(BaseModel):
    projects: list[Project]


class Meeting(BaseModel):
    document_id: str
    project_id: str
    title: str | None = None
    meeting_date: date | None = None
    participants: list[str] = Field(default_factory=list)
    status: str
    chunk_count: int
    source: Source


class MeetingList(BaseModel):
    meetings: list[Meeting]


class TaskChange(BaseModel):
    """Where a later meeting changed a task: reported it done or cancelled, handed it over, moved its date."""

    change: Change
    new_value: str | None = Field(default=None, description="reassigned: the new owner; rescheduled: the new date")
    evidence: str
    document_id: str
    meeting_date: date | None = None
    start_char: int
    end_char: int
    start_turn: int | None = None
    end_turn: int | None = None
    speakers: list[str] = Field(default_factory=list)


class Task(BaseModel):
    id: str
    description: str
    assignee: str | None = None
    due_date: date | None = None
    status: str
    project_id: str
    document_id: str
    source: Source
    meeting_date: date | None = None
    start_char: int
    end_char: int
    start_turn: int | None = None
    end_turn: int | None = None
    speakers: list[str] = Field(default_factory=list)
    evidence: str | None = None
    created_at: datetime
    changes: list[TaskChange] = Field(default_factory=list, description="what later meetings changed, oldest first")


class TaskList(BaseModel):
    tasks: list[Task]


class Cited(BaseModel):
    """An extracted item with where it was said: document, meeting date, turns (or characters), speakers, evidence."""

    id: str
    description: str
    status: str | None = None
    document_id: str
    source: Source
    meeting_date: date | None = None
    start_char: int
    end_char: int
    start_turn: int | None = None
    end_turn: int | None = None
    speakers: list[str] = Field(default_factory=list)
    evidence: str | None = None
    assignee: str | None = None
    due_date: date | None = None

    @model_validator(mode="before")
    @classmethod
    def _source(cls, data: Any) -> Any:  # the library's rows name the source in two columns
        if isinstance(data, dict) and "source" not in data and "source_uri" in data:
            return {**data, "source": {"uri": data["source_uri"], "title": data.get("source_title")}}
        return data


class ChangeItem(Cited):
    """One thing that happened in a meeting of the range; ``change`` rows cite the later meeting's statement."""

    owner: str | None = Field(default=None, description="a decision's owner")
    change: Change | None = Field(default=None, description="a later meeting's statement: what it reported")
    new_value: str | None = Field(default=None, description="handed over: the new owner; rescheduled: the new due date")
    supersedes: list[Cited] = Field(default_factory=list, description="decisions made: the earlier decisions it replaced")
    superseded_by: Cited | None = Field(default=None, description="decisions superseded: the decision that replaced it")
    target: Cited | None = Field(default=None, description="the task or risk the statement changed, as it is now")


class ChangeLists(BaseModel):
    decisions_made: list[ChangeItem]
    decisions_superseded: list[ChangeItem]
    risks_raised: list[ChangeItem]
    risks_closed: list[ChangeItem]
    tasks_assigned: list[ChangeItem] = Field(description="assignee and due date as stated then; status as it is now")
    tasks_done: list[ChangeItem]
    tasks_cancelled: list[ChangeItem]
    tasks_handed_over: list[ChangeItem]
    tasks_rescheduled: list[ChangeItem]


class ProjectChanges(ChangeLists):
    project_id: str
    since: date
    until: date | None = None


class BriefItem(Cited):
    owner: str | None = None
    category: str | None = None
    likelihood: str | None = None
    impact: str | None = None
    mitigation: str | None = None
    overdue: bool | None = Field(default=None, description="tasks: due before today")


class OwnerTasks(BaseModel):
    owner: str | None = Field(description="null: tasks nobody was named for")
    tasks: list[BriefItem]


class ProjectBrief(BaseModel):
    project_id: str
    today: date
    since: date = Field(description="the start of the changes window: today minus days")
    decisions: list[BriefItem] = Field(description="current decisions (superseded ones left out), newest meeting first")
    risks: list[BriefItem] = Field(description="open risks, newest meeting first")
    tasks_by_owner: list[OwnerTasks] = Field(description="open tasks: overdue first, then soonest due, undated last")
    overdue_tasks: int
    changes: ChangeLists


class Document(BaseModel):
    id: str
    project_id: str
    kind: str | None = None
    format: str | None = None
    status: str
    error: str | None = None
    chunk_count: int
    title: str | None = None
    meeting_date: date | None = None
    participants: list[str] = Field(default_factory=list)
    source: Source
    embedding_model: str | None = None
    created_at: datetime
    updated_at: datetime


class ErrorBody(BaseModel):
    code: str
    message: str


class ErrorResponse(BaseModel):
    error: ErrorBody


# --- /v1/ask ----------------------------------------------------------------------------

MAX_QUESTION_CHARS = 4000
MAX_HISTORY_MESSAGES = 20
MAX_HISTORY_CHARS = 8000


class ChatMessage(Strict):
    role: Literal["user", "assistant"]
    content: PlainText = Field(max_length=MAX_HISTORY_CHARS)


class AskRequest(Strict):
    question: Annotated[str, BeforeValidator(_valid_unicode)] = Field(
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
