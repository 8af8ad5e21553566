"""The searchable types of ``POST /v1/search``: one small spec each, one SQL template for all.

A spec names the table, the text a result shows as ``content``, the columns it carries
in ``metadata`` and how its keyword side is ranked. Adding a type is one entry in
``SEARCHABLE_TYPES`` (and its name in the API's ``SearchType``); the statement itself lives in ``rag.search.engine``.

Every table here has ``tenant_id``, ``project_id``, ``document_id``, ``start_char``/``end_char``,
``start_turn``/``end_turn``, ``speakers``, ``embedding``/``embedding_model`` and ``search_tsv``
(sql/0001 and sql/0003). In SQL the row is aliased ``c`` and its document ``d``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

KeywordRanking = Literal["postings_bm25", "tsvector_bm25"]

# Fields of the extracted items that say where they came from (sql/0003, shared by the four tables).
_PROVENANCE = ("segment_id", "evidence", "method")


@dataclass(frozen=True)
class SearchableType:
    """How one kind of row is searched and shown."""

    name: str
    table: str
    content: str  # SQL over ``c``: the text shown as the result's content
    fields: tuple[str, ...]  # columns of ``c`` copied into ``metadata``
    keyword: KeywordRanking = "tsvector_bm25"
    context_fields: tuple[str, ...] = ()  # the fields /v1/context spells out next to the content

    def metadata_sql(self) -> str:
        """A jsonb object of the type's fields plus the meeting date of its document."""
        pairs = [f"'{column}', c.{column}" for column in self.fields] + ["'meeting_date', d.meeting_date"]
        return f"jsonb_build_object({', '.join(pairs)})"


def _extracted(name: str, table: str, own_fields: tuple[str, ...]) -> SearchableType:
    """A decision, risk, opportunity or task: its description, its own fields and where it came from."""
    return SearchableType(name, table, "c.description", (*own_fields, *_PROVENANCE), context_fields=own_fields)


SEARCHABLE_TYPES: dict[str, SearchableType] = {
    spec.name: spec
    for spec in (
        SearchableType(
            "chunk", "chunks", "c.content", ("chunk_index", "heading_path", "start_time", "end_time"),
            keyword="postings_bm25",
        ),
        SearchableType(
            "segment", "segments", "c.title || E'\\n' || c.summary",
            ("title", "summary", "segment_index", "heading_path", "method"),
        ),
        _extracted("decision", "decisions", ("rationale", "owner", "impact", "status")),
        _extracted("risk", "risks", ("category", "likelihood", "impact", "mitigation")),
        _extracted("opportunity", "opportunities", ("type", "owner", "next_step")),
        _extracted("task", "tasks", ("assignee", "due_date", "status")),
    )
}  # fmt: skip
