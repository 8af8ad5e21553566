"""The kinds of knowledge the service stores and searches, each written once.

Every other list of kinds derives from ``KINDS``: the search's types (``rag.search.types``),
the API's ``SearchType`` (``rag.api.models``), the backfill's item tables and the LLM's answer
(``rag.backfill.models``, ``rag.backfill.extract``), the status counts (``rag.store.status``),
the per-model HNSW indexes (``rag.store.migrations``), the ask tools and the local CLI.
Adding a kind is one entry here and one migration creating its table (tests/test_knowledge.py
checks that every place lists exactly these kinds and that the tables have these columns);
an extracted kind also needs what extracts it: a ``Proposed*`` model and rules.

Each kind has a table of its own with the shared columns ``tenant_id``, ``project_id``,
``document_id``, ``start_char``/``end_char``, ``start_turn``/``end_turn``, ``speakers``,
``embedding``/``embedding_model`` and ``search_tsv`` (sql/0001, sql/0003), plus its ``fields``.
Considered and not done yet: one ``knowledge_items`` table with a ``kind`` column in place of the
four near-identical item tables of sql/0003. It would need a data migration and a measurement
that search latency per type stays level (bench/); until then the tables stay apart.

This module sits below api, ask, backfill, search and store, imports none of them and nothing
heavy (no psycopg, no pydantic): the API builds its ``Literal`` types from ``NAMES``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# BM25 with N, lengths and document frequencies from the project's kept statistics (chunks: chunk_lexemes and
# keyword_stats), or counted from the filtered rows' tsvectors at query time (the smaller item tables).
KeywordRanking = Literal["project_stats_bm25", "tsvector_bm25"]
Stage = Literal["ingest", "segment", "extract"]  # what writes a kind's rows: ingest or a backfill stage

# Columns of every extracted item that say where it came from (sql/0003).
PROVENANCE = ("segment_id", "evidence", "method")


@dataclass(frozen=True)
class Kind:
    """One kind of row: its API name, table, own columns, how it is searched and shown."""

    name: str  # the API's type name, e.g. "decision"
    table: str  # its table, e.g. "decisions" (also the LLM answer's list of them)
    label: str  # what the ask tools tell a model it is
    stage: Stage
    content: str  # SQL over the row ``c``: the text a search result shows
    fields: tuple[str, ...]  # the kind's own columns the extractor fills, besides the shared ones
    linked: tuple[str, ...] = ()  # columns a later meeting may change (rag.store.timeline keeps them)
    keyword: KeywordRanking = "tsvector_bm25"
    quotable: bool = True  # the content holds the source's own sentences: an extractive answer may quote it

    @property
    def extracted(self) -> bool:
        return self.stage == "extract"

    @property
    def metadata_fields(self) -> tuple[str, ...]:
        """Columns of ``c`` copied into a search result's ``metadata``."""
        return (*self.fields, *self.linked, *PROVENANCE) if self.extracted else self.fields

    @property
    def context_fields(self) -> tuple[str, ...]:
        """The fields ``/v1/context`` spells out next to the content (an extracted item's own)."""
        return (*self.fields, *self.linked) if self.extracted else ()

    def metadata_sql(self) -> str:
        """A jsonb object of the metadata fields plus the meeting date of the row's document ``d``."""
        pairs = [f"'{column}', c.{column}" for column in self.metadata_fields] + ["'meeting_date', d.meeting_date"]
        return f"jsonb_build_object({', '.join(pairs)})"


def _extracted(name: str, table: str, fields: tuple[str, ...], linked: tuple[str, ...] = ()) -> Kind:
    return Kind(name, table, "extracted items", "extract", "c.description", fields, linked)


KINDS: tuple[Kind, ...] = (
    Kind(
        "chunk", "chunks", "transcript and document passages", "ingest", "c.content",
        ("chunk_index", "heading_path", "start_time", "end_time"), keyword="project_stats_bm25",
    ),
    Kind(
        "segment", "segments", "topic summaries", "segment", "c.title || E'\\n' || c.summary",
        ("title", "summary", "segment_index", "heading_path", "method"), quotable=False,
    ),
    _extracted("decision", "decisions", ("rationale", "owner", "impact"), linked=("status", "superseded_by")),
    _extracted("risk", "risks", ("category", "likelihood", "impact", "mitigation"), linked=("status",)),
    _extracted("opportunity", "opportunities", ("type", "owner", "next_step")),
    _extracted("task", "tasks", ("assignee", "due_date", "status")),
)  # fmt: skip

BY_NAME: dict[str, Kind] = {kind.name: kind for kind in KINDS}
NAMES: tuple[str, ...] = tuple(BY_NAME)
EXTRACTED: tuple[Kind, ...] = tuple(kind for kind in KINDS if kind.extracted)
BACKFILLED: tuple[Kind, ...] = tuple(kind for kind in KINDS if kind.stage != "ingest")


def labelled_names() -> str:
    """``chunk: transcript and document passages; ...; decision, risk, ...: extracted items``."""
    groups: dict[str, list[str]] = {}
    for kind in KINDS:
        groups.setdefault(kind.label, []).append(kind.name)
    return "; ".join(f"{', '.join(names)}: {label}" for label, names in groups.items())
