"""The citable spans tools quote: a search hit's, an extracted item's, and how a range reads."""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Any

from rag.ask.citations import Passage

if TYPE_CHECKING:
    from rag.search.engine import Hit

PASSAGE_CHARS = 2500  # a passage the model reads: a 512-token chunk of English is about 2,000 characters


def hit_passage(type_name: str, hit: Hit) -> Passage:
    meeting = (hit.metadata or {}).get("meeting_date")
    return Passage(
        type=type_name, document_id=hit.document_id, source_uri=hit.source_uri, title=hit.title,
        start_char=hit.start_char, end_char=hit.end_char, start_turn=hit.start_turn, end_turn=hit.end_turn,
        speakers=tuple(hit.speakers), meeting_date=date.fromisoformat(meeting) if isinstance(meeting, str) else meeting,
    )  # fmt: skip


def item_passage(item: dict[str, Any], type_name: str) -> Passage:
    """The citable span of an extracted item (or a later meeting's statement) of ``rag.search.changes`` / ``brief``."""
    return Passage(
        type=type_name, document_id=item["document_id"], source_uri=item["source_uri"], title=item["source_title"],
        start_char=item["start_char"], end_char=item["end_char"], start_turn=item["start_turn"],
        end_turn=item["end_turn"], speakers=tuple(item["speakers"] or ()), meeting_date=day(item["meeting_date"]),
    )  # fmt: skip


def day(value: Any) -> date | None:
    return date.fromisoformat(value) if isinstance(value, str) else value


def where(start_turn: int | None, end_turn: int | None, start_char: int, end_char: int) -> str:
    return f"turns {start_turn}-{end_turn}" if start_turn is not None else f"chars {start_char}-{end_char}"
