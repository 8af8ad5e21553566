"""rag.backfill.earlier_items: what the extract prompt shows a model besides the segment's lines."""

from __future__ import annotations

from rag.backfill.earlier_items import MAX_LISTED_SHOWN, listed_items_prompt
from rag.backfill.models import KnowledgeItem


def listed(kind: str, description: str) -> KnowledgeItem:
    return KnowledgeItem(kind, description, f"- {description}", 0, len(description) + 2, "sections")  # type: ignore[arg-type]


def test_what_a_document_lists_is_shown_as_recorded_one_line_each_and_bounded():
    assert listed_items_prompt([]) == ""
    shown = listed_items_prompt([listed("decision", "We move the launch to May 19."), listed("task", "Dana: BOM")])
    assert shown == (
        "Items this document already lists under its own headings (do not extract them again):\n"
        "- decision: We move the launch to May 19.\n- task: Dana: BOM\n\n"
    )
    many = listed_items_prompt([listed("task", f"Task {n}") for n in range(MAX_LISTED_SHOWN + 40)])
    assert many.count("\n- task: ") == MAX_LISTED_SHOWN and f"Task {MAX_LISTED_SHOWN - 1}\n" in many
