"""Claiming documents for a stage and recording what happened to them.

Every statement is scoped: claims select whole documents (their tenant and project
come with them), and every later read or write of a document's rows filters on its
``id`` and ``tenant_id``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any
from uuid import UUID

# Which documents a stage claims, and how many attempts it makes, belongs to the documents
# table (rag.store.backfill_queue: `rag status` counts the same queue).
from rag.store.backfill_queue import CLAIMABLE, MAX_ATTEMPTS, NEXT_STATUS, StageName

if TYPE_CHECKING:
    import psycopg


@dataclass(frozen=True)
class TurnSpan:
    """One turn of a transcript; ``body[start_char:end_char]`` is its whole line, ``text`` the utterance."""

    index: int
    speaker: str
    start_char: int
    end_char: int
    text_start: int  # where the utterance starts (after "Speaker: ")
    text: str


@dataclass(frozen=True)
class ClaimedDocument:
    id: UUID
    tenant_id: str
    project_id: str
    kind: str
    format: str | None
    title: str | None
    meeting_date: date | None
    body: str
    turns: tuple[TurnSpan, ...]
    embedding_model: str | None


def turn_spans(body: str, turns_json: Sequence[Sequence[Any]] | None) -> tuple[TurnSpan, ...]:
    """``documents.turns`` ([[speaker, start_char, end_char, start_s, end_s], ...]) with their utterances."""
    spans = []
    for index, (speaker, start, end, *_times) in enumerate(turns_json or ()):
        line = body[start:end]
        text_start = start
        prefix = f"{speaker}:"
        if speaker and line.startswith(prefix):
            text_start = start + len(prefix)
        while text_start < end and body[text_start].isspace():
            text_start += 1
        spans.append(TurnSpan(index, speaker or "", start, end, text_start, body[text_start:end].strip()))
    return tuple(spans)


# Extraction goes in meeting order: a meeting's items are then written before a later meeting's
# extraction looks for the earlier items it changes (the chat model's E1, E2, ... list).
CLAIM_ORDER = {"extract": "meeting_date NULLS LAST, updated_at, id"}


def claim_batch(conn: psycopg.Connection, stage: StageName, model_id: str, limit: int) -> list[ClaimedDocument]:
    """Lock up to ``limit`` documents ready for ``stage``; call inside the batch's transaction."""
    rows = conn.execute(
        f"""SELECT id, tenant_id, project_id, kind, format, title, meeting_date, body, turns, embedding_model
            FROM documents
            WHERE {CLAIMABLE[stage]} AND backfill_attempts < %(max_attempts)s
            ORDER BY {CLAIM_ORDER.get(stage, "updated_at, id")}
            LIMIT %(limit)s
            FOR UPDATE SKIP LOCKED""",
        {"model": model_id, "max_attempts": MAX_ATTEMPTS, "limit": limit},
    ).fetchall()
    documents = []
    for id_, tenant, project, kind, fmt, title, meeting_date, body, turns, model in rows:
        turns = json.loads(turns) if isinstance(turns, str) else turns
        body = body or ""
        documents.append(
            ClaimedDocument(
                id_, tenant, project, kind or "document", fmt, title, meeting_date, body, turn_spans(body, turns), model
            )
        )
    return documents


def mark_advanced(conn: psycopg.Connection, document: ClaimedDocument, stage: StageName) -> None:
    conn.execute(
        """UPDATE documents SET status = %s, backfill_error = NULL, backfill_attempts = 0, updated_at = now()
           WHERE id = %s AND tenant_id = %s""",
        (NEXT_STATUS[stage], document.id, document.tenant_id),
    )


def record_error(conn: psycopg.Connection, document: ClaimedDocument, stage: StageName, error: str) -> None:
    """The document keeps its status; the error and one more attempt are recorded."""
    conn.execute(
        """UPDATE documents SET backfill_error = %s, backfill_attempts = backfill_attempts + 1
           WHERE id = %s AND tenant_id = %s""",
        (f"{stage}: {error}"[:2000], document.id, document.tenant_id),
    )


def reset_attempts(conn: psycopg.Connection, *, tenant_id: str | None = None) -> int:
    """Make documents that exhausted their attempts claimable again (after fixing the cause)."""
    cursor = conn.execute(
        """UPDATE documents SET backfill_attempts = 0
           WHERE backfill_attempts > 0 AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)""",
        {"tenant": tenant_id},
    )
    return cursor.rowcount
