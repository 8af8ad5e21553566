"""Which model the database's vectors are in, and the settings that embed in it.

Configuration names the model a deployment embeds with (``RAG_EMBEDDING_*``) and, while the corpus moves to
another one, the target (``RAG_REEMBED_*``). Until a run switches the database (``embedding_space``), the
configured model is the one; from that commit on, the target is. Only a deployment with a target configured reads
the table, once per use: a switch is seen by the next search, never a few seconds later.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psycopg

    from rag.config import Settings


def target_settings(settings: Settings) -> Settings | None:
    """The settings with the target model as the embedding model; None when no move is configured."""
    target = settings.reembed
    if target.provider is None:
        return None
    values: dict[str, object] = {"embedding_provider": target.provider, "embedding_model": target.model}
    values["embedding_dimension"] = target.dimension
    if target.runtime is not None:
        values["embedding_runtime"] = target.runtime
    return settings.with_values(**values)


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
