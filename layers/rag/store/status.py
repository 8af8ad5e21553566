"""Pipeline status: documents per project and stage, and the failures with their errors."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psycopg


@dataclass(frozen=True)
class Failure:
    source_uri: str
    error: str | None


@dataclass
class PipelineStatus:
    counts: dict[tuple[str, str], int] = field(default_factory=dict)  # (project_id, status) -> documents
    chunks: int = 0
    failures: list[Failure] = field(default_factory=list)


def pipeline_status(conn: psycopg.Connection, *, max_failures: int = 50) -> PipelineStatus:
    status = PipelineStatus()
    for project, state, count in conn.execute(
        "SELECT project_id, status, count(*) FROM documents GROUP BY 1, 2 ORDER BY 1, 2"
    ):
        status.counts[(project, state)] = count
    status.chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    status.failures = [
        Failure(*row)
        for row in conn.execute(
            "SELECT source_uri, error FROM documents WHERE status = 'failed' ORDER BY updated_at DESC LIMIT %s",
            (max_failures,),
        )
    ]
    return status
