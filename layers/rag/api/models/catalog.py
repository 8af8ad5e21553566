"""The catalog routes' responses: projects, meetings, tasks, a project's changes and brief, a document; the error body."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from pydantic import BaseModel, Field, model_validator

from rag.api.models.search import Source
from rag.validation import Change


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


class Said(BaseModel):
    """Where something was said: the document, its meeting's date, the turns (or characters) and who spoke."""

    document_id: str
    meeting_date: date | None = None
    start_char: int
    end_char: int
    start_turn: int | None = None
    end_turn: int | None = None
    speakers: list[str] = Field(default_factory=list)


class SaidIn(Said):
    """Where something was said, with its source document's name and the words themselves."""

    source: Source
    evidence: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _source(cls, data: Any) -> Any:  # the library's rows name the source in two columns
        if isinstance(data, dict) and "source" not in data and "source_uri" in data:
            return {**data, "source": {"uri": data["source_uri"], "title": data.get("source_title")}}
        return data


class TaskChange(Said):
    """Where a later meeting changed a task: reported it done or cancelled, handed it over, moved its date."""

    change: Change
    new_value: str | None = Field(default=None, description="reassigned: the new owner; rescheduled: the new date")
    evidence: str


class Task(SaidIn):
    id: str
    description: str
    assignee: str | None = None
    due_date: date | None = None
    status: str
    project_id: str
    created_at: datetime
    changes: list[TaskChange] = Field(default_factory=list, description="what later meetings changed, oldest first")


class TaskList(BaseModel):
    tasks: list[Task]


class Cited(SaidIn):
    """An extracted item with where it was said: document, meeting date, turns (or characters), speakers, evidence."""

    id: str
    description: str
    status: str | None = None
    assignee: str | None = None
    due_date: date | None = None


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
