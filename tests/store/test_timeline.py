"""rag.store.timeline on the real database: the words it compares, and a relink that changes nothing writes nothing."""

from __future__ import annotations

import pytest

from rag.store import timeline

pytestmark = pytest.mark.slow


def test_a_phrasal_verb_is_also_its_noun(db):
    sql = "SELECT " + timeline._COMPOUNDS_SQL.format(text="%s")
    [words] = db.execute(sql, ("We cut over on March 2 and roll out the new set up",)).fetchone()
    assert {"cutov", "rollout", "setup"} <= set(words)
    assert db.execute("SELECT tsvector_to_array(to_tsvector('english', 'the cutover'))").fetchone()[0] == ["cutov"]
    # no pronoun's "pick it up", no "in" opening a time or a place: those would be words of nothing
    [words] = db.execute(sql, ("Can you draft that in two weeks? I'll pick it up, the order went in, in the archive",)).fetchone()
    assert set(words) == {"draft", "two", "week", "ll", "pick", "order", "wentin", "archiv"}


def test_relinking_an_unchanged_project_rewrites_no_row(db, local_embedder):
    from rag.config import Settings
    from tests.backfill.conftest import FIXTURES
    from tests.backfill.test_timeline_stages import MEETINGS, backfill, ingest

    assert FIXTURES.is_dir()
    for path in MEETINGS:
        ingest(db, path, local_embedder)
    backfill(db, Settings(embedding_provider="local", llm_provider="none"), local_embedder)

    def versions():
        return {
            table: db.execute(f"SELECT array_agg(xmin::text ORDER BY id) FROM {table}").fetchone()[0]  # noqa: S608
            for table in ("decisions", "risks", "tasks", "knowledge_changes")
        }

    before = versions()
    first = timeline.relink(db, "default", "office")
    assert versions() == before
    assert timeline.relink(db, "default", "office") == first
    assert any(by is not None for by in first.superseded_by.values())
