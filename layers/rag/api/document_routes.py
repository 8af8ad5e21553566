"""The page's document routes: the caller's documents with counts by status, and one document's content (a window of
its text with the turns in it, its segments and the items extracted from it)."""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from rag.api.error_responses import ApiError
from rag.api.models.documents import (
    DocumentContent,
    DocumentList,
    DocumentStatus,
    Item,
    ListedDocument,
    Segment,
    StatusCounts,
    Turn,
)
from rag.api.models.search import Source
from rag.api.request_scope import request_conn, request_tenant
from rag.validation import PROJECT_PATTERN

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]  # Powertools leaves Router.__init__ unannotated

# A window of a million characters is at most 4 MB of UTF-8 (6 MB with JSON escapes only for control-heavy text):
# under Lambda's 6 MB response with the turns, segments and items beside it.
MAX_WINDOW_CHARS = 1_000_000
MAX_OFFSET = 1_000_000_000  # PostgreSQL text holds at most 1 GB: no body is longer, and the SQL takes an int


def _source(row: dict[str, Any]) -> Source:
    return Source(uri=row.pop("source_uri"), title=row.pop("source_title", None) or row.get("title"))


def _listed(row: dict[str, Any]) -> ListedDocument:
    source = _source(row)
    return ListedDocument(**row, source=source)


@router.get("/v1/documents", summary="The caller's documents, newest first, with counts by status", tags=["catalog"])
def documents(
    project_id: Annotated[str | None, Query(pattern=PROJECT_PATTERN)] = None,
    status: Annotated[DocumentStatus | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> DocumentList:
    from rag.store.documents_view import list_documents, status_counts

    conn, tenant = request_conn(), request_tenant(router.current_event.raw_event)
    rows = list_documents(conn, tenant, project_id, status, limit)
    return DocumentList(
        documents=[_listed(row) for row in rows],
        counts=StatusCounts(**status_counts(conn, tenant, project_id)),
    )


@router.get(
    "/v1/documents/<document_id>/content",
    summary="A window of a document's text with the turns in it, its segments and the items extracted from it",
    tags=["catalog"],
)
def document_content(
    document_id: Annotated[UUID, Path()],
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET, description="the window's first character in the body")] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_WINDOW_CHARS, description="the window's length in characters")] = 200_000,
) -> DocumentContent:
    from rag.store.documents_view import document_items, document_segments, document_window

    conn, tenant = request_conn(), request_tenant(router.current_event.raw_event)
    row = document_window(conn, tenant, str(document_id), offset, limit)
    if row is None:
        raise ApiError(404, "not_found", f"document {document_id} not found")
    turns = [
        Turn(index=index, **dict(zip(("speaker", "start_char", "end_char", "start_s", "end_s"), turn, strict=False)))
        for index, turn in row.pop("turns")
    ]
    source = _source(row)
    return DocumentContent(
        **row,
        source=source,
        offset=offset,
        truncated=offset + len(row["text"]) < row["length"],
        turns=turns,
        segments=[Segment(**segment) for segment in document_segments(conn, tenant, str(document_id))],
        items=[Item(**item) for item in document_items(conn, tenant, str(document_id))],
    )
