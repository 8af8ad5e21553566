"""Query-log rows ride along with a later search's transaction (a full batch, or once the interval has passed), or go alone."""

from __future__ import annotations

import json
from functools import partial

from rag.search.engine import SearchScope, search_chunks
from rag.search.query_log import PendingQueryLog


def logged(db) -> list[tuple]:
    return db.execute(
        "SELECT tenant_id, query, mode, types, filters, result_count, top_similarity FROM query_log ORDER BY id"
    ).fetchall()


def test_a_quiet_log_writes_at_once_and_a_busy_one_rides_along_with_the_next_search(db):
    db.execute("TRUNCATE query_log")
    log = PendingQueryLog()

    # GIVEN a log that has not written for a long time: the row goes at once, alone.
    log.add("acme", "first question", "hybrid", ["chunk", "task"], {"project_ids": ["p"]}, 3, 0.71, 0.5, 4.2)
    assert log.due(60)
    log.flush(db)
    assert logged(db) == [("acme", "first question", "hybrid", ["chunk", "task"], {"project_ids": ["p"]}, 3, 0.71)]

    # WHEN another row comes within the flush interval, it waits ...
    log.add("acme", "second question", "keyword", ["chunk"], {}, 0, None, None, 1.0)
    assert not log.due(60)
    assert len(logged(db)) == 1

    # ... THEN the next search's transaction carries it, and the search still answers.
    hits = search_chunks(db, SearchScope("acme"), mode="keyword", query="anything", query_vector=None, model_id="m",
                         dimension=3, top_k=5, before=log.write_in_transaction)  # fmt: skip
    assert hits == []
    assert logged(db)[1] == ("acme", "second question", "keyword", ["chunk"], {}, 0, None)
    assert not log.due(0)  # nothing left to write


def test_filters_and_odd_text_survive_the_batched_insert(db):
    db.execute("TRUNCATE query_log")
    log = PendingQueryLog()
    filters = {"speakers": ["O'Brien, Pat"], "source_prefix": "a,b"}
    log.add("t", 'quote " and comma, here', "semantic", ["segment"], filters, 1, 0.2, 0.2, 2.0)
    log.add("t", "second", "semantic", ["decision", "risk"], {}, 2, 0.3, 0.25, 3.0)

    log.flush(db)

    rows = logged(db)
    assert [r[1] for r in rows] == ['quote " and comma, here', "second"]
    assert rows[0][4] == json.loads(json.dumps(filters)) and rows[1][3] == ["decision", "risk"]


def test_under_load_rows_wait_for_a_full_batch_or_the_flush_interval(db):
    db.execute("TRUNCATE query_log")
    log = PendingQueryLog(batch_rows=3)
    log.add("acme", "q0", "semantic", ["chunk"], {}, 1, 0.5, 0.5, 1.0)
    log.flush(db)  # just written: the interval starts now

    def search(flush_seconds: float) -> None:
        search_chunks(db, SearchScope("acme"), mode="keyword", query="anything", query_vector=None, model_id="m",
                      dimension=3, top_k=5, before=partial(log.write_in_transaction, flush_seconds=flush_seconds))  # fmt: skip

    counts = []
    for i in (1, 2, 3):
        log.add("acme", f"q{i}", "semantic", ["chunk"], {}, 1, 0.5, 0.5, 1.0)
        search(flush_seconds=60)
        counts.append(len(logged(db)))
    assert counts == [1, 1, 4]  # two rows wait beside two searches; the third makes a batch, sent with its search

    log.add("acme", "q4", "semantic", ["chunk"], {}, 1, 0.5, 0.5, 1.0)
    search(flush_seconds=0)  # a lone row goes once the interval has passed
    assert [row[1] for row in logged(db)] == ["q0", "q1", "q2", "q3", "q4"]


def test_parallel_searches_write_every_row_once(db, database_url):
    """Threads share one log (the local API serves searches on threads): each row is written once, none lost."""
    from concurrent.futures import ThreadPoolExecutor

    from rag.store.connection import connect

    db.execute("TRUNCATE query_log")
    log = PendingQueryLog(batch_rows=5)

    def client(n: int) -> None:
        with connect(database_url) as conn:
            for i in range(25):
                log.add("acme", f"client{n} q{i}", "keyword", ["chunk"], {}, 0, None, None, 1.0)
                search_chunks(conn, SearchScope("acme"), mode="keyword", query="anything", query_vector=None, model_id="m",
                              dimension=3, top_k=5, before=partial(log.write_in_transaction, flush_seconds=60))  # fmt: skip

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(client, range(8)))
    log.flush(db)  # what the last batch left waiting

    queries = [row[1] for row in logged(db)]
    assert sorted(queries) == sorted(f"client{n} q{i}" for n in range(8) for i in range(25))
