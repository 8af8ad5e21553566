"""The stages by name, built on the configured embedder (and LLM)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rag.backfill.progress import StageResult
from rag.backfill.runner import OnDocument, Stage, run_stage
from rag.store.backfill_queue import STAGES

if TYPE_CHECKING:
    import psycopg

    from rag.config import Settings
    from rag.embedding.base import Embedder


def build_stage(name: str, settings: Settings, embedder: Embedder | None = None) -> Stage:
    if name not in STAGES:
        raise ValueError(f"unknown backfill stage {name!r}: expected one of {', '.join(STAGES)}")
    if embedder is None:
        from rag.embedding import get_embedder

        embedder = get_embedder(settings)
    if name == "segment":
        from rag.backfill.segment import SegmentStage

        return SegmentStage(settings, embedder)
    if name == "embed":
        from rag.backfill.embed import EmbedStage

        return EmbedStage(embedder)
    from rag.backfill.extract import ExtractStage

    return ExtractStage(settings, embedder)


def run_named_stage(
    conn: psycopg.Connection,
    settings: Settings,
    name: str,
    batch_size: int,
    *,
    embedder: Embedder | None = None,
    on_document: OnDocument | None = None,
) -> StageResult:
    """One batch of the stage called ``name`` (what the stage Lambdas and `rag backfill` run).

    While the corpus moves to another model (``RAG_REEMBED_*``), the stage embeds in the model the database is in
    and commits only if it still is (``rag.store.embedding_space``).
    """
    moving = settings.reembed.provider is not None
    if embedder is None and moving:
        from rag.store.embedding_space import active_embedder

        embedder = active_embedder(conn, settings)
    stage = build_stage(name, settings, embedder)
    return run_stage(conn, stage, batch_size, on_document=on_document, check_model=moving)
