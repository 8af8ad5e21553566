"""The end of a re-embedding run: the rows no batch job covered, then the switch.

Rows still without a target vector (failed records, tables too small for a batch job, rows written since the plan)
are embedded online; then one transaction swaps ``embedding`` and ``embedding_alt`` of every embedded table by name
and records the target as the database's model. The indexes follow their columns, so the target's index, filled as
the imports landed, serves searches from that commit on. Rows that got their first vector in between have none in
the target: they are embedded right after, and the old model's indexes are dropped.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from rag.reembed import rows
from rag.reembed.runs import Target, run_record, running_target, target_embedder, target_of
from rag.store.schema import EMBEDDED_TABLES

if TYPE_CHECKING:
    import psycopg

    from rag.config import Settings
    from rag.embedding.base import Embedder

logger = logging.getLogger(__name__)

# Rows finish embeds online in one call; more are left to the next call.
CATCH_UP_ROWS = 2_000
# The swap waits at most this long for the tables' locks (running searches and writes), then tries again later.
SWAP_LOCK_TIMEOUT = "5s"


_WITHOUT_TARGET = "embedding IS NOT NULL AND embedding_alt_model IS DISTINCT FROM %s"


def _missing(conn: psycopg.Connection, table: str, model_id: str, limit: int, after: int) -> list[int]:
    """Ids after ``after`` of ``table``'s embedded rows without a vector of ``model_id`` beside it."""
    found = conn.execute(
        f"SELECT id FROM {rows.check_table(table)} WHERE {_WITHOUT_TARGET} AND id > %s ORDER BY id LIMIT %s",  # noqa: S608
        (model_id, after, limit),
    ).fetchall()
    return [int(row[0]) for row in found]


def count_missing(conn: psycopg.Connection, model_id: str) -> int:
    """Embedded rows of every table still without a vector of ``model_id``."""
    missing = 0
    for table in EMBEDDED_TABLES:
        row = conn.execute(f"SELECT count(*) FROM {table} WHERE {_WITHOUT_TARGET}", (model_id,)).fetchone()  # noqa: S608
        missing += int(row[0]) if row else 0
    return missing


def catch_up(conn: psycopg.Connection, target: Target, budget: int = CATCH_UP_ROWS) -> tuple[int, int]:
    """Embed online up to ``budget`` rows that have no target vector yet: (rows embedded, rows still missing).

    One pass over each table's ids, so a row that cannot be written (deleted meanwhile) is passed, not retried.
    """
    embedder = target_embedder(target)
    done = 0
    for table in EMBEDDED_TABLES:
        after = 0
        while done < budget:
            ids = _missing(conn, table, target.model_id, min(500, budget - done), after)
            if not ids:
                break
            done += embed_rows(conn, table, ids, embedder, target.model_id, alternate=True)
            after = ids[-1]
    return done, count_missing(conn, target.model_id)


def embed_rows(
    conn: psycopg.Connection, table: str, ids: list[int], embedder: Embedder, model_id: str, *, alternate: bool
) -> int:
    """Embed the rows ``ids`` of ``table`` now, into ``embedding_alt`` or ``embedding``."""
    found = rows.pieces_of(conn, table, ids, embedder)
    vectors = embedder.embed([p.text for p in found]) if found else []
    by_row = rows.row_vectors(table, list(zip(found, vectors)))
    if alternate:
        return rows.write_alternate(conn, table, by_row, model_id)
    return rows.write_active(conn, table, by_row, model_id)


def finish(conn: psycopg.Connection, settings: Settings, run_id: str) -> dict[str, Any]:
    """Catch up, then swap in one transaction; ``catching_up`` while rows are left (the machine calls again).

    What follows the swap is idempotent and done again by a retried call, in case the call that swapped died after.
    """
    state, source_model, target_model, _ = run_record(conn, run_id)
    if state == "switched":
        target = target_of(settings)
        if target is not None and target.model_id == target_model:
            _after_swap(conn, source_model, target)
        return {"run_id": run_id, "status": "switched", "caught_up": 0, "remaining": 0}
    target = running_target(conn, settings, run_id)
    started = time.monotonic()
    caught_up, remaining = catch_up(conn, target)
    conn.execute("UPDATE reembed_runs SET caught_up = caught_up + %s, updated_at = now() WHERE id = %s", (caught_up, run_id))
    if remaining or not _swap(conn, run_id, target):
        return {"run_id": run_id, "status": "catching_up", "caught_up": caught_up, "remaining": remaining}
    healed = _after_swap(conn, source_model, target)
    logger.info(
        "switched to the target model",
        extra={"run_id": run_id, "model": target_model, "caught_up": caught_up, "healed": healed,
               "seconds": round(time.monotonic() - started, 1)},
    )  # fmt: skip
    return {"run_id": run_id, "status": "switched", "caught_up": caught_up, "remaining": 0}


def _after_swap(conn: psycopg.Connection, source_model: str, target: Target) -> int:
    """The documents' record of their model (the backfill's queue reads it), the rows left behind, the old indexes."""
    conn.execute("UPDATE documents SET embedding_model = %s WHERE embedding_model = %s", (target.model_id, source_model))
    healed = _embed_rows_left_behind(conn, target)
    _drop_source_indexes(conn, source_model)
    return healed


def _swap(conn: psycopg.Connection, run_id: str, target: Target) -> bool:
    """Swap the columns of every embedded table and record the target, in one transaction; False if locks timed out."""
    import psycopg

    tables = ", ".join(EMBEDDED_TABLES)
    try:
        with conn.transaction():
            conn.execute(f"SET LOCAL lock_timeout = '{SWAP_LOCK_TIMEOUT}'")
            conn.execute(f"LOCK TABLE {tables} IN ACCESS EXCLUSIVE MODE")
            for table in EMBEDDED_TABLES:
                for column in ("embedding", "embedding_model"):
                    alternate = column.replace("embedding", "embedding_alt", 1)
                    conn.execute(f"ALTER TABLE {table} RENAME COLUMN {column} TO swap_{column}")
                    conn.execute(f"ALTER TABLE {table} RENAME COLUMN {alternate} TO {column}")
                    conn.execute(f"ALTER TABLE {table} RENAME COLUMN swap_{column} TO {alternate}")
            conn.execute(
                "UPDATE embedding_space SET model_id = %s, dimension = %s, switched_at = now()",
                (target.model_id, target.dimension),
            )
            conn.execute("UPDATE reembed_runs SET state = 'switched', updated_at = now() WHERE id = %s", (run_id,))
    except psycopg.errors.LockNotAvailable:
        logger.info("tables busy: the swap waits for the next call", extra={"run_id": run_id})
        return False
    return True


def _embed_rows_left_behind(conn: psycopg.Connection, target: Target) -> int:
    """Rows that got their first vector between the last catch-up and the swap have none in the target: embed them."""
    embedder = target_embedder(target)
    done = 0
    for table in EMBEDDED_TABLES:
        after = 0
        while found := conn.execute(
            f"""SELECT id FROM {table} WHERE embedding IS NULL AND embedding_alt IS NOT NULL AND id > %s
                ORDER BY id LIMIT 500""",  # noqa: S608 - our own table names
            (after,),
        ).fetchall():
            done += embed_rows(conn, table, [int(r[0]) for r in found], embedder, target.model_id, alternate=False)
            after = int(found[-1][0])
    return done


def _drop_source_indexes(conn: psycopg.Connection, source_model: str) -> None:
    """The old model's indexes (now over ``embedding_alt``): nothing searches them, and they hold memory.

    Found in the catalog by their predicate, so no table is read to learn the old model's dimension."""
    from psycopg import sql

    found = conn.execute(
        """SELECT indexname FROM pg_indexes
           WHERE schemaname = current_schema() AND tablename = ANY(%s) AND indexdef LIKE %s""",
        (list(EMBEDDED_TABLES), f"%WHERE (embedding_alt_model = {_literal(source_model)}::text)%"),
    ).fetchall()
    for (name,) in found:
        conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name)))


def _literal(text: str) -> str:
    """``text`` as pg_indexes spells a string constant, LIKE's wildcards escaped."""
    quoted = "'" + text.replace("'", "''") + "'"
    return quoted.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
