"""One batch of one stage: claim, process each document in a savepoint, commit, count what is left."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from rag.backfill.documents import ClaimedDocument, claim_batch, mark_advanced, record_error
from rag.backfill.progress import StageResult
from rag.errors import TransientError, is_transient
from rag.store.backfill_queue import StageName, count_remaining
from rag.store.embedding_space import require_model

if TYPE_CHECKING:
    import psycopg

    from rag.config import Settings
    from rag.embedding.base import Embedder

# Called after each document with its error (None when it moved on): progress bars, logs.
OnDocument = Callable[[ClaimedDocument, "str | None"], None]


class Stage(Protocol):
    name: StageName
    model_id: str  # the configured embedding model (which documents embed/extract may claim)

    def process(self, conn: psycopg.Connection, document: ClaimedDocument) -> None:
        """Replace the stage's rows of ``document``; raise to record an error for it."""
        ...


class ModelStage:
    """A stage that reads the settings (LLM or offline) and embeds with the configured model."""

    def __init__(self, settings: Settings, embedder: Embedder):
        self.settings = settings
        self.embedder = embedder
        self.model_id = embedder.model_id


def run_stage(
    conn: psycopg.Connection, stage: Stage, batch_size: int, *, on_document: OnDocument | None = None,
    check_model: bool = False,
) -> StageResult:  # fmt: skip
    """Run one batch of ``stage`` in one transaction.

    A document's own error is recorded and the batch goes on; a transient error rolls the
    whole batch back (the documents stay claimable) and is raised as ``TransientError``.
    ``check_model``: commit only if the database is still in the stage's model (``require_model``).
    """
    processed = failed = 0
    try:
        with conn.transaction():
            for document in claim_batch(conn, stage.name, stage.model_id, batch_size):
                try:
                    with conn.transaction():  # a savepoint: a failed document leaves no rows behind
                        stage.process(conn, document)
                        mark_advanced(conn, document, stage.name)
                except Exception as exc:
                    if is_transient(exc):
                        raise
                    record_error(conn, document, stage.name, f"{type(exc).__name__}: {exc}")
                    failed += 1
                    if on_document:
                        on_document(document, str(exc))
                    continue
                processed += 1
                if on_document:
                    on_document(document, None)
            if check_model:
                require_model(conn, stage.model_id)
    except Exception as exc:
        if is_transient(exc) and not isinstance(exc, TransientError):
            raise TransientError(f"{stage.name} batch rolled back, will be retried: {type(exc).__name__}: {exc}") from exc
        raise
    return StageResult(processed=processed, failed=failed, remaining=count_remaining(conn, stage.name, stage.model_id))
