"""The catalog routes: the caller's projects, meetings and tasks, a project's changes and brief, one document."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from rag.api.error_responses import ApiError
from rag.api.models.catalog import (
    Document,
    Meeting,
    MeetingList,
    Project,
    ProjectBrief,
    ProjectChanges,
    ProjectList,
    Task,
    TaskList,
)
from rag.api.models.search import Source
from rag.api.request_scope import request_conn, request_tenant
from rag.validation import NO_NUL_PATTERN, PROJECT_PATTERN, TaskStatus

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]  # Powertools leaves Router.__init__ unannotated


@router.get("/v1/projects", summary="The caller's projects with counts", tags=["catalog"])
def projects() -> ProjectList:
    from rag.store.catalog import list_projects

    return ProjectList(
        projects=[Project(**row) for row in list_projects(request_conn(), request_tenant(router.current_event.raw_event))]
    )


@router.get("/v1/projects/<project_id>", summary="One project", tags=["catalog"])
def project(project_id: Annotated[str, Path(pattern=PROJECT_PATTERN)]) -> Project:
    from rag.store.catalog import get_project

    row = get_project(request_conn(), request_tenant(router.current_event.raw_event), project_id)
    if row is None:
        raise ApiError(404, "not_found", f"project {project_id!r} not found")
    return Project(**row)


def _with_source(row: dict[str, Any]) -> dict[str, Any]:
    """A catalog row with its ``source_uri``/``source_title`` columns as one ``source`` object."""
    fields = {k: v for k, v in row.items() if k not in ("source_uri", "source_title")}
    return {**fields, "source": Source(uri=row["source_uri"], title=row["source_title"])}


@router.get("/v1/meetings", summary="Meetings, most recent first", tags=["catalog"])
def meetings(
    project_id: Annotated[str | None, Query(pattern=PROJECT_PATTERN)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> MeetingList:
    from rag.store.catalog import list_meetings

    rows = list_meetings(request_conn(), request_tenant(router.current_event.raw_event), project_id, limit)
    return MeetingList(meetings=[Meeting(**_with_source(row)) for row in rows])


@router.get("/v1/tasks", summary="Extracted tasks, soonest due first, as later meetings left them", tags=["catalog"])
def tasks(
    project_id: Annotated[str | None, Query(pattern=PROJECT_PATTERN)] = None,
    status: Annotated[TaskStatus | None, Query()] = None,
    assignee: Annotated[str | None, Query(min_length=1, max_length=200, pattern=NO_NUL_PATTERN)] = None,
    due_after: Annotated[date | None, Query(description="due on or after this day (YYYY-MM-DD)")] = None,
    due_before: Annotated[date | None, Query(description="due on or before this day (YYYY-MM-DD)")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> TaskList:
    from rag.search.tasks import list_tasks

    _ordered(due_after, due_before, "due_after", "due_before")
    rows = list_tasks(request_conn(), request_tenant(router.current_event.raw_event), project_id=project_id, status=status, assignee=assignee, limit=limit,
                      due_after=due_after, due_before=due_before)  # fmt: skip
    return TaskList(tasks=[Task(**_with_source(row)) for row in rows])


def _ordered(first: date | None, last: date | None, first_name: str, last_name: str) -> None:
    if first is not None and last is not None and last < first:
        raise ApiError(422, "validation_error", f"{last_name} ({last}) is before {first_name} ({first})")


def _known_project(project_id: str) -> None:
    from rag.store.catalog import get_project

    if get_project(request_conn(), request_tenant(router.current_event.raw_event), project_id) is None:
        raise ApiError(404, "not_found", f"project {project_id!r} not found")


@router.get(
    "/v1/projects/<project_id>/changes",
    summary="What was decided, superseded, raised, closed, assigned, done, handed over or rescheduled in a date range",
    tags=["catalog"],
)
def project_changes(
    project_id: Annotated[str, Path(pattern=PROJECT_PATTERN)],
    since: Annotated[date, Query(description="first meeting date (inclusive, YYYY-MM-DD)")],
    until: Annotated[date | None, Query(description="last meeting date (inclusive); default: no end")] = None,
    limit: Annotated[int, Query(ge=1, le=200, description="at most this many items per list")] = 50,
) -> ProjectChanges:
    from rag.search.changes import changes_between

    _ordered(since, until, "since", "until")
    _known_project(project_id)
    found = changes_between(
        request_conn(), request_tenant(router.current_event.raw_event), project_id, since=since, until=until, limit=limit
    )
    return ProjectChanges.model_validate({"project_id": project_id, "since": since, "until": until, **found})


BRIEF_FORMATS = {"json": content_types.APPLICATION_JSON, "markdown": "text/markdown; charset=utf-8"}


@router.get(
    "/v1/projects/<project_id>/brief",
    summary="The project as it stands: current decisions, open risks, open tasks by owner, what changed lately",
    tags=["catalog"],
    responses={
        200: {
            "description": "the brief: JSON, or Markdown with ?format=markdown or Accept: text/markdown (every line cited)",
            "content": {"application/json": {"model": ProjectBrief}, "text/markdown": {"schema": {"type": "string"}}},
        }
    },
)
def project_brief(
    project_id: Annotated[str, Path(pattern=PROJECT_PATTERN)],
    days: Annotated[int, Query(ge=1, le=366, description="what changed in meetings of the last N days")] = 14,
    since: Annotated[date | None, Query(description="what changed in meetings from this date on (instead of days)")] = None,
    format: Annotated[
        Literal["json", "markdown"] | None, Query(description="json or markdown (default: from Accept, else json)")
    ] = None,
) -> Response[str]:
    from rag.search.brief import brief_markdown
    from rag.search.brief import project_brief as build_brief

    _known_project(project_id)
    headers = router.current_event.headers or {}
    accept = next((value for name, value in headers.items() if name.lower() == "accept"), "") if format is None else ""
    chosen = format or ("markdown" if "text/markdown" in accept.lower() else "json")
    brief = build_brief(
        request_conn(),
        request_tenant(router.current_event.raw_event),
        project_id,
        today=datetime.now(UTC).date(),
        days=days,
        since=since,
    )
    body = brief_markdown(brief) if chosen == "markdown" else ProjectBrief(**brief).model_dump_json()
    return Response(status_code=200, content_type=BRIEF_FORMATS[chosen], body=body)


@router.get("/v1/documents/<document_id>", summary="One document: status, error, chunk count, source", tags=["catalog"])
def document(document_id: Annotated[UUID, Path()]) -> Document:
    from rag.store.catalog import get_document

    row = get_document(request_conn(), request_tenant(router.current_event.raw_event), str(document_id))
    if row is None:
        raise ApiError(404, "not_found", f"document {document_id} not found")
    source = Source(uri=row.pop("source_uri"), title=row["title"])
    return Document(**row, source=source)
