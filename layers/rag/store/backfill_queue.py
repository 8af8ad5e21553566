"""The backfill's queue in the documents table: which documents each stage claims, and how many are left.

The stages (rag.backfill) claim and advance documents; `rag status` (rag.store.status) counts
what each stage still has to do. Both read these definitions, which belong to the table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, get_args

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
STAGES: tuple[StageName, ...] = get_args(StageName)


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
