"""The catalog tools: the request's projects, recent meetings, tasks as later meetings left them, a document's passage."""

from __future__ import annotations

from datetime import date

from rag.ask.citations import Passage
from rag.ask.tool_args import MeetingsArgs, NoArgs, ReadDocumentArgs, TasksArgs
from rag.ask.tool_context import ToolContext, ToolError, ToolResult
from rag.ask.tool_passages import PASSAGE_CHARS, item_passage, where


def run_list_projects(ctx: ToolContext, args: NoArgs) -> ToolResult:
    from rag.store.catalog import list_projects

    rows = [row for row in list_projects(ctx.conn, ctx.tenant_id) if ctx.in_scope(row["id"])]
    return ToolResult({"projects": rows}, len(rows))


def run_recent_meetings(ctx: ToolContext, args: MeetingsArgs) -> ToolResult:
    from rag.store.catalog import list_meetings

    projects = ctx.narrow([args.project_id] if args.project_id else [])
    rows = []
    for project in projects or (None,):
        rows += list_meetings(ctx.conn, ctx.tenant_id, project, args.limit)
    rows.sort(key=lambda r: r["meeting_date"] or date.min, reverse=True)
    meetings = [
        {"document_id": r["document_id"], "project_id": r["project_id"], "title": r["title"],
         "meeting_date": r["meeting_date"], "participants": r["participants"], "source": r["source_uri"]}
        for r in rows[: args.limit]
    ]  # fmt: skip
    return ToolResult({"meetings": meetings}, len(meetings))


def run_open_tasks(ctx: ToolContext, args: TasksArgs) -> ToolResult:
    from rag.search.tasks import list_tasks

    projects = ctx.narrow([args.project_id] if args.project_id else [])
    rows = []
    for project in projects or (None,):
        rows += list_tasks(ctx.conn, ctx.tenant_id, project_id=project, status=None if args.status == "any" else args.status,
                           assignee=args.assignee, limit=args.limit, due_after=args.due_after, due_before=args.due_before)  # fmt: skip
    rows.sort(key=lambda r: (r["due_date"] is None, r["due_date"] or date.min))  # several projects: soonest due first
    tasks = []
    for r in rows[: args.limit]:
        cite = ctx.citations.cite(item_passage(r, "task"))
        tasks.append(
            {**cite, "quoted_description": ctx.redact(r["description"]), "assignee": r["assignee"],
             "due_date": r["due_date"], "status": r["status"], "project_id": r["project_id"],
             "meeting_date": r["meeting_date"]}
        )  # fmt: skip
    return ToolResult({"tasks": tasks}, len(tasks))


def run_read_document(ctx: ToolContext, args: ReadDocumentArgs) -> ToolResult:
    row = ctx.conn.execute(
        """SELECT project_id, source_uri, title, meeting_date, body, turns FROM documents
           WHERE tenant_id = %s AND id = %s""",
        (ctx.tenant_id, args.document_id),
    ).fetchone()
    if row is None or not ctx.in_scope(row[0]):
        raise ToolError(f"document {args.document_id} not found")
    project_id, uri, title, meeting_date, body, turns = row
    body = body or ""
    start_turn = end_turn = None
    speakers: tuple[str, ...] = ()
    if turns and (args.start_turn is not None or args.end_turn is not None):
        last = len(turns) - 1
        start_turn = min(args.start_turn if args.start_turn is not None else 0, last)
        end_turn = min(max(args.end_turn if args.end_turn is not None else start_turn + 10, start_turn), last)
        start, end = turns[start_turn][1], turns[end_turn][2]
        speakers = tuple(dict.fromkeys(t[0] for t in turns[start_turn : end_turn + 1] if t[0]))
    else:
        start = min(args.start_char or 0, len(body))
        end = min(args.end_char if args.end_char is not None else start + PASSAGE_CHARS, len(body), start + PASSAGE_CHARS)
        end = max(end, start)
    if end - start > PASSAGE_CHARS:
        end = start + PASSAGE_CHARS
    text = body[start:end]
    if not text:
        raise ToolError("that range of the document is empty")
    cite = ctx.citations.cite(
        Passage(type="chunk", document_id=args.document_id, source_uri=uri, title=title, start_char=start, end_char=end,
                start_turn=start_turn, end_turn=end_turn, speakers=speakers, meeting_date=meeting_date)
    )  # fmt: skip
    return ToolResult(
        {**cite, "source": title or uri, "meeting_date": meeting_date, "where": where(start_turn, end_turn, start, end),
         "quoted_text": ctx.redact(text), "document_length": len(body)},
        1,
    )  # fmt: skip
