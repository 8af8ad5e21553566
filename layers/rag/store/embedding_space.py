"""Which model the database's vectors are in, and the settings that embed in it (``rag.reembed`` moves it).

Configuration names the model a deployment embeds with (``RAG_EMBEDDING_*``) and, while the corpus moves to
another one, the target (``RAG_REEMBED_*``). Until a run switches the database (``embedding_space``), the
configured model is the one; from that commit on, the target is. Only a deployment with a target configured reads
the table, once per use: a switch is seen by the next search, never a few seconds later. Its writers check it again
in the transaction that writes vectors (``require_model``), so a batch embedded in the old model just before the
switch is rolled back and retried in the new one rather than written into the new model's column.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rag.errors import TransientError

if TYPE_CHECKING:
    import psycopg

    from rag.config import Settings
    from rag.embedding.base import Embedder


def target_settings(settings: Settings) -> Settings | None:
    """The settings with the target model as the embedding model; None when no move is configured."""
    target = settings.reembed
    if target.provider is None:
        return None
    # A copy, not a validated rebuild (with_values reads the environment again: 1.5 ms, on every search of a move).
    values: dict[str, object] = {"provider": target.provider, "model": target.model, "dimension": target.dimension}
    if target.runtime is not None:
        values["runtime"] = target.runtime
    return settings.model_copy(update={"embedding": settings.embedding.model_copy(update=values)})


def active_model(conn: psycopg.Connection) -> tuple[str, int] | None:
    """(model id, dimension) the vectors of ``embedding`` are in; None before anything was recorded."""
    row = conn.execute("SELECT model_id, dimension FROM embedding_space").fetchone()
    return None if row is None else (str(row[0]), int(row[1]))


def record_model(conn: psycopg.Connection, model_id: str, dimension: int) -> tuple[str, int]:
    """The recorded model, recording ``model_id`` first when the database has none yet."""
    conn.execute(
        "INSERT INTO embedding_space (model_id, dimension) VALUES (%s, %s) ON CONFLICT DO NOTHING", (model_id, dimension)
    )
    recorded = active_model(conn)
    assert recorded is not None  # just inserted, or there already
    return recorded


def embedding_settings(conn: psycopg.Connection, settings: Settings) -> Settings:
    """``settings`` as they embed in the database's model: the target's once a run switched to it."""
    target = target_settings(settings)
    if target is None:
        return settings
    active = active_model(conn)
    return target if active is not None and active[0] == target.embedding.model_id else settings


class ModelSwitched(TransientError):
    """The database switched model while this write's vectors were made in the old one: embed again and retry."""


def require_model(conn: psycopg.Connection, model_id: str) -> None:
    """Raise ModelSwitched unless the database's vectors are (still) in ``model_id``: the last statement before commit.

    A write that touched an embedded table before a switch holds its lock, so the switch waits for it; a write that
    comes after the switch reads the new model here (a fresh snapshot) and is rolled back.
    """
    active = active_model(conn)
    if active is not None and active[0] != model_id:
        raise ModelSwitched(f"the database switched to {active[0]} while vectors of {model_id} were being written")


def active_embedder(conn: psycopg.Connection, settings: Settings) -> Embedder:
    """The embedder of the model the database is in (the configured one unless a move switched it)."""
    from rag.embedding import get_embedder

    return get_embedder(embedding_settings(conn, settings))
