"""A re-embedding run's identity: the configured target model, and the run's row (one running at a time)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rag.reembed.errors import ReembedError
from rag.store.embedding_space import target_settings

if TYPE_CHECKING:
    import psycopg

    from rag.config import Settings
    from rag.embedding.base import Embedder


@dataclass(frozen=True)
class Target:
    settings: Settings
    model_id: str
    dimension: int


def target_of(settings: Settings) -> Target | None:
    target = target_settings(settings)
    if target is None:
        return None
    return Target(target, target.embedding.model_id, target.embedding.resolved_dimension)


def target_embedder(target: Target) -> Embedder:
    from rag.embedding import get_embedder

    return get_embedder(target.settings)


def run_record(conn: psycopg.Connection, run_id: str) -> tuple[str, str, str, int]:
    row = conn.execute(
        "SELECT state, source_model_id, target_model_id, target_dimension FROM reembed_runs WHERE id = %s", (run_id,)
    ).fetchone()
    if row is None:
        raise ReembedError(f"no re-embedding run {run_id!r}")
    return str(row[0]), str(row[1]), str(row[2]), int(row[3])


def running_target(conn: psycopg.Connection, settings: Settings, run_id: str) -> Target:
    state, _, target_model, _ = run_record(conn, run_id)
    if state != "running":
        raise ReembedError(f"run {run_id} is {state}, not running")
    target = target_of(settings)
    if target is None or target.model_id != target_model:
        raise ReembedError(f"run {run_id} moves to {target_model}, but the configured target is {target and target.model_id}")
    return target


def fail(conn: psycopg.Connection, run_id: str, error: str) -> dict[str, Any]:
    """Record the run as failed (the database stays in its model; a later plan starts over)."""
    conn.execute(
        "UPDATE reembed_runs SET state = 'failed', error = %s, updated_at = now() WHERE id = %s AND state = 'running'",
        (error[:2000], run_id),
    )
    return {"run_id": run_id, "status": "failed"}
