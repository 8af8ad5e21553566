"""The page's document routes: the list with counts by status, one document's content; upload tickets; health."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field, StringConstraints

from rag.api.models.search import Source
from rag.validation import PROJECT_PATTERN, Strict

DocumentStatus = Literal["raw_ingested", "segmented", "embedded", "extracted", "failed"]


class DocumentHead(BaseModel):
    """What the list and the content say of a document."""

    document_id: str
    project_id: str
    kind: str | None = None
    format: str | None = None
    title: str | None = None
    meeting_date: date | None = None
    status: str
    source: Source


class ListedDocument(DocumentHead):
    error: str | None = Field(default=None, description="why ingest failed it")
    backfill_error: str | None = Field(default=None, description="the last failure of a backfill stage on it")
    chunk_count: int
    created_at: datetime
    updated_at: datetime


class StatusCounts(BaseModel):
    raw_ingested: int
    segmented: int
    embedded: int
    extracted: int
    failed: int


class DocumentList(BaseModel):
    documents: list[ListedDocument] = Field(description="newest first")
    counts: StatusCounts = Field(description="every document of the project filter by status (not limited)")


class Turn(BaseModel):
    index: int = Field(description="the turn's position in the document (start_turn/end_turn of results)")
    speaker: str | None = None
    start_char: int
    end_char: int
    start_s: float | None = None
    end_s: float | None = None


class Segment(BaseModel):
    index: int
    title: str
    summary: str
    start_turn: int | None = None
    end_turn: int | None = None
    start_char: int
    end_char: int


class Item(BaseModel):
    kind: Literal["decision", "risk", "opportunity", "task"]
    id: str
    description: str
    status: str | None = None
    assignee: str | None = None
    due_date: date | None = None
    superseded_by: str | None = Field(default=None, description="decisions: the decision that replaced it")
    start_turn: int | None = None
    end_turn: int | None = None
    start_char: int
    end_char: int
    speakers: list[str] = Field(default_factory=list)


class DocumentContent(DocumentHead):
    participants: list[str] = Field(default_factory=list)
    length: int = Field(description="characters of the whole body")
    offset: int
    text: str = Field(description="the body from offset, at most limit characters")
    truncated: bool = Field(description="the body goes on after this window")
    turns: list[Turn] = Field(description="the turns overlapping the window (char offsets into the whole body)")
    segments: list[Segment] = Field(description="all of the document's segments, in order")
    items: list[Item] = Field(description="the items extracted from the document, in the order they were said")


# A file's name as the page sends it: no folders, not hidden, no control characters.
FileName = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=r"^[^/\\.\x00-\x1f\x7f][^/\\\x00-\x1f\x7f]*$")]
ContentType = Annotated[str, StringConstraints(max_length=100, pattern=r"^[\w.+-]+/[\w.+-]+(; ?charset=[\w-]+)?$")]


class UploadRequest(Strict):
    project_id: Annotated[str, StringConstraints(pattern=PROJECT_PATTERN)]
    filename: FileName = Field(description='the file\'s own name: no "/" or "\\", not starting with "."')
    content_type: ContentType | None = Field(default=None, description="default: from the name's extension")
    size: int | None = Field(default=None, ge=0, description="bytes; refused above the ingest's size limit")


class UploadTicket(BaseModel):
    url: str = Field(description="a presigned PUT, valid for expires_in seconds")
    method: Literal["PUT"] = "PUT"
    headers: dict[str, str] = Field(description="send these headers with the PUT (they are signed)")
    key: str = Field(description="tenants/<caller's tenant>/projects/<project_id>/<filename>")
    expires_in: int


class Health(BaseModel):
    status: Literal["ok", "unavailable"]
    database: Literal["ok", "unavailable"]
    version: str
