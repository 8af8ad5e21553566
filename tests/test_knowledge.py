"""The registry of kinds (``rag.knowledge``): every other list of kinds is derived from it, so adding a
kind is one entry there (and one migration): each place lists exactly the registry's kinds, in its order."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest

from rag.knowledge import BACKFILLED, EXTRACTED, KINDS, NAMES, PROVENANCE

REPO = Path(__file__).resolve().parents[1]
TABLES = tuple(kind.table for kind in KINDS)
EXTRACTED_NAMES = tuple(kind.name for kind in EXTRACTED)


SHARED_COLUMNS = {
    "tenant_id", "project_id", "document_id", "start_char", "end_char", "start_turn", "end_turn", "speakers",
    "embedding", "embedding_model", "search_tsv",
}  # fmt: skip


def in_order(text: str, words: tuple[str, ...]) -> bool:
    """Every word appears in ``text``, in this order."""
    at = 0
    for word in words:
        at = text.find(word, at)
        if at < 0:
            return False
        at += len(word)
    return True


def test_names_tables_and_fields_are_sound():
    assert len(set(NAMES)) == len(set(TABLES)) == len(KINDS)
    assert NAMES[0] == "chunk"  # the default type of a search
    for kind in KINDS:
        assert kind.name.isidentifier() and kind.table.isidentifier() and kind.table.islower()
        assert len(set(kind.fields)) == len(kind.fields) and not set(kind.fields) & SHARED_COLUMNS


def test_search_lists_exactly_the_registrys_kinds():
    from rag.search.types import SEARCHABLE_TYPES

    assert tuple(SEARCHABLE_TYPES) == NAMES
    assert all(SEARCHABLE_TYPES[kind.name] is kind for kind in KINDS)


def test_the_api_lists_exactly_the_registrys_kinds():
    from rag.api.models.ask import Citation
    from rag.api.models.search import SearchRequest, SearchResult
    from rag.validation import ALL_TYPES, SearchType

    assert get_args(SearchType) == ALL_TYPES == NAMES
    assert tuple(SearchRequest(query="q", types=["all"]).types) == NAMES
    types = SearchRequest.model_json_schema()["properties"]["types"]
    assert types["maxItems"] == len(NAMES) + 1  # every kind and "all"
    assert types["items"]["anyOf"][0]["enum"] == list(NAMES)
    assert SearchResult.model_json_schema()["properties"]["type"]["enum"] == list(NAMES)
    assert Citation.model_json_schema()["properties"]["type"]["enum"] == list(NAMES)


def test_the_ask_tools_name_every_kind():
    from rag.ask.extractive import QUOTED_TYPES
    from rag.ask.tool_args import SearchArgs

    types = SearchArgs.model_json_schema()["properties"]["types"]
    assert types["items"]["anyOf"][0]["enum"] == list(NAMES) and types["maxItems"] == len(NAMES) + 1
    assert in_order(types["description"], (*NAMES, "all"))
    assert "segment" not in QUOTED_TYPES and {"chunk", *EXTRACTED_NAMES} <= set(QUOTED_TYPES)


def test_the_backfill_lists_exactly_the_extracted_kinds():
    from rag.backfill.extract import LINK_FIELDS, PROPOSED_KINDS, Located, ProposedKnowledge
    from rag.backfill.models import ITEM_TABLES, ItemKind

    assert get_args(ItemKind) == tuple(ITEM_TABLES) == EXTRACTED_NAMES
    assert ITEM_TABLES == {kind.name: (kind.table, kind.fields) for kind in EXTRACTED}
    assert PROPOSED_KINDS == tuple((kind.name, kind.table) for kind in EXTRACTED)
    # What the LLM answers with: one list per extracted kind, each item with the kind's own fields.
    # ... and the changes of earlier items these lines state (rag.backfill.changes' kinds of statement).
    assert tuple(ProposedKnowledge.model_fields) == (*(kind.table for kind in EXTRACTED), "changes")
    for kind in EXTRACTED:
        proposed = ProposedKnowledge.model_fields[kind.table].annotation.__args__[0]
        own = [name for name in proposed.model_fields if name not in Located.model_fields and name not in LINK_FIELDS]
        assert tuple(own) == kind.fields


def test_the_store_lists_exactly_the_registrys_tables():
    from rag.store.migrations import EMBEDDED_TABLES
    from rag.store.status import KNOWLEDGE_TABLES

    assert EMBEDDED_TABLES == TABLES
    assert KNOWLEDGE_TABLES == tuple(kind.table for kind in BACKFILLED) == TABLES[1:]


def test_the_cli_and_the_stack_name_every_kind():
    import argparse

    pytest.importorskip("aws_cdk", reason="the CDK app is not installed here (the CPython 3.12 run: make test312)")
    from infra.constructs.backfill import STAGE_DESCRIPTIONS
    from rag_local.commands import query_api

    subparsers = argparse.ArgumentParser().add_subparsers()
    query_api.register(subparsers)
    [types] = [a for a in subparsers.choices["search"]._actions if a.dest == "types"]
    assert in_order(types.help, (*NAMES, "all"))
    assert in_order(STAGE_DESCRIPTIONS["extract"], tuple(kind.table for kind in EXTRACTED))


def test_each_kinds_table_has_the_shared_columns_and_its_fields(db):
    for kind in KINDS:
        columns = {
            name for (name,) in db.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = %s",
                (kind.table,),
            )
        }  # fmt: skip
        wanted = SHARED_COLUMNS | set(kind.metadata_fields) | ({"description", *PROVENANCE} if kind.extracted else set())
        assert wanted <= columns, f"{kind.table} lacks {sorted(wanted - columns)}"


def test_status_counts_every_backfilled_table(db):
    from rag.store.status import pipeline_status

    assert list(pipeline_status(db).knowledge) == [*(kind.table for kind in BACKFILLED), "open tasks"]


def test_the_registry_sits_at_the_bottom_and_imports_nothing_heavy():
    source = (REPO / "layers" / "rag" / "knowledge.py").read_text()
    imported = {
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(ast.parse(source)) if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }  # fmt: skip
    assert imported <= {"__future__", "dataclasses", "typing"}
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, rag.knowledge; print(' '.join(sorted(sys.modules)))"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert not [m for m in loaded if m.split(".")[0] in {"psycopg", "pydantic", "pgvector", "numpy"}]
    assert [m for m in loaded if m.split(".")[0] == "rag"] == ["rag", "rag.knowledge"]
