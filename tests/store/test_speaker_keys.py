"""Speaker keys (sql/0011): one folded name per label, the same folding as the owners' clean_label."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from rag.config import REPO_ROOT
from rag.people import clean_label
from rag.store.migrations import discover, migrate

LABELS = [
    "Sofia Ruiz (PM)",
    "SOFIA RUIZ",
    "  sofia   ruiz ",
    "Dana Kim (Firmware)",
    "Dana Kim [Contoso] (Firmware)",
    "Daniel Ortiz (Police Chief)",
    "(PM)",
    "[Contoso] (PM)",
    "Ann (a(b))",
    "Speaker 1",
    "Élodie Brun (Design)",
    "O'Brien, Pat",
    "Project Manager",
]


@pytest.mark.parametrize("label", LABELS)
def test_speaker_key_is_the_owners_clean_label_lower_cased(db, label: str):
    """The SQL folding and the Python one answer alike, so a name means one person everywhere."""
    (key,) = db.execute("SELECT speaker_key(%s)", (label,)).fetchone()
    assert key == clean_label(label).lower()


def test_speaker_keys_are_distinct_sorted_and_skip_empty_labels(db):
    labels = ["Sofia Ruiz (PM)", "sofia ruiz", "", "   ", "Dana Kim"]
    assert db.execute("SELECT speaker_keys(%s::text[])", (labels,)).fetchone() == (["dana kim", "sofia ruiz"],)


@pytest.fixture
def database_before_0011(database_url: str, tmp_path: Path):
    """A database of its own migrated up to 0010, and the folder holding those migrations."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    for migration in discover(REPO_ROOT / "sql"):
        if migration.version < "0011":
            (tmp_path / migration.path.name).write_bytes(migration.path.read_bytes())
    name = f"{conninfo_to_dict(database_url)['dbname']}_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    yield make_conninfo(database_url, dbname=name), tmp_path
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_0011_and_0012_give_the_rows_already_there_their_keys(database_before_0011):
    from rag.store.connection import connect

    url, before = database_before_0011
    with connect(url, register=False) as conn:
        migrate(conn, before, {})
        turns = '[["Dana", 0, 5, null, null], ["Sofia Ruiz (PM)", 6, 16, 1.5, 2.0]]'
        document = conn.execute(
            "INSERT INTO documents (tenant_id, project_id, bucket, object_key, status, participants, turns)"
            " VALUES ('t', 'p', 'b', 'a.txt', 'raw_ingested', %s, %s) RETURNING id",
            (["Dana Kim"], turns),
        ).fetchone()[0]
        conn.execute(
            "INSERT INTO documents (tenant_id, project_id, bucket, object_key, status, body)"
            " VALUES ('t', 'p', 'b', 'notes.md', 'raw_ingested', '# Notes')"
        )
        conn.execute(
            "INSERT INTO chunks (document_id, tenant_id, project_id, chunk_index, content, token_count, start_char,"
            " end_char, speakers) VALUES (%s, 't', 'p', 0, 'we ship in March', 4, 0, 16, %s)",
            (document, ["Sofia Ruiz (PM)", "Dana Kim"]),
        )
        conn.execute(
            "INSERT INTO tasks (document_id, tenant_id, project_id, start_char, end_char, speakers, description,"
            " evidence, method) VALUES (%s, 't', 'p', 0, 16, %s, 'ship', 'we ship', 'rules')",
            (document, ["DANA KIM (Firmware)"]),
        )

        assert {"0011", "0012"} <= set(migrate(conn, REPO_ROOT / "sql", {}))

        assert conn.execute("SELECT speakers, speaker_keys FROM chunks").fetchall() == [
            (["Sofia Ruiz (PM)", "Dana Kim"], ["dana kim", "sofia ruiz"])
        ]
        assert conn.execute("SELECT speakers, speaker_keys FROM tasks").fetchall() == [(["DANA KIM (Firmware)"], ["dana kim"])]
        for table in ("segments", "decisions", "risks", "opportunities"):
            column = conn.execute(
                "SELECT is_generated FROM information_schema.columns WHERE table_name = %s AND column_name = 'speaker_keys'",
                (table,),
            ).fetchone()
            assert column == ("ALWAYS",), table
        # sql/0012: a document's people, from its participants and its turns' speakers.
        assert conn.execute("SELECT object_key, speaker_keys FROM documents ORDER BY object_key").fetchall() == [
            ("a.txt", ["dana", "dana kim", "sofia ruiz"]),
            ("notes.md", []),
        ]
        index = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'chunks_speaker_keys_idx'").fetchone()
        assert index is not None and "USING gin (speaker_keys)" in index[0]
