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
from typing import TYPE_CHECKING, Any, Literal
from uuid import UUID

if TYPE_CHECKING:
    import psycopg

StageName = Literal["segment", "embed", "extract"]

# A document whose stage failed this many times is left alone (visible in `rag status`)
# until someone resets backfill_attempts (`rag backfill --retry-failed`).
MAX_ATTEMPTS = 3

# Which documents each stage may claim. A document embedded with another model than the
# configured one goes back to the embed stage (then extract runs again for its items).
CLAIMABLE: dict[str, str] = {
    "segment": "status = 'raw_ingested'",
    "embed": "(status = 'segmented' OR (status IN ('embedded', 'extracted') AND embedding_model IS DISTINCT FROM %(model)s))",
    "extract": "status = 'embedded' AND embedding_model = %(model)s",
}
NEXT_STATUS: dict[str, str] = {"segment": "segmented", "embed": "embedded", "extract": "extracted"}


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


def claim_batch(conn: psycopg.Connection, stage: StageName, model_id: str, limit: int) -> list[ClaimedDocument]:
    """Lock up to ``limit`` documents ready for ``stage``; call inside the batch's transaction."""
    rows = conn.execute(
        f"""SELECT id, tenant_id, project_id, kind, format, title, meeting_date, body, turns, embedding_model
            FROM documents
            WHERE {CLAIMABLE[stage]} AND backfill_attempts < %(max_attempts)s
            ORDER BY updated_at, id
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


def count_remaining(conn: psycopg.Connection, stage: StageName, model_id: str) -> int:
    """Documents the stage would still claim (locked ones included: another runner has them).

    A batch that claimed nothing while this is > 0 found them all locked: the state machine
    counts such batches (``idle_batches``) and ends the stage for this run after a few.
    """
    row = conn.execute(
        f"SELECT count(*) FROM documents WHERE {CLAIMABLE[stage]} AND backfill_attempts < %(max_attempts)s",
        {"model": model_id, "max_attempts": MAX_ATTEMPTS},
    ).fetchone()
    return int(row[0]) if row else 0


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
