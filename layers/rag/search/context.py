"""An LLM-ready context string with numbered citations, never over the token budget.

Neighbouring or overlapping chunks of one document are merged into one passage, so
the model does not read the same turns twice and each citation is one span. Other
types (segments, decisions, risks, ...) are never merged: their content is a summary or
a description, not a span of the document's text, and each is cited on its own with its
type and fields spelled out (``Decision: owner Maya; status current``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from rag.search.engine import Hit
from rag.search.types import SEARCHABLE_TYPES


@dataclass(frozen=True)
class Passage:
    """One cited span: the first (best) hit of its merged group, and the span the group covers."""

    type: str  # the searched type of ``hit`` (chunk, segment, decision, ...)
    hit: Hit
    text: str
    start_char: int
    end_char: int
    start_turn: int | None
    end_turn: int | None


def merge_neighbours(ranked: Sequence[tuple[str, Hit]]) -> list[Passage]:
    """Merge chunks of one document whose character ranges overlap or touch; best rank first."""
    passages: list[Passage] = []
    for type_name, hit in ranked:
        for i, passage in enumerate(passages):
            if (
                passage.hit.document_id == hit.document_id
                and passage.type == type_name == "chunk"
                and hit.start_char <= passage.end_char + 1
                and hit.end_char >= passage.start_char - 1
            ):
                passages[i] = _union(passage, hit)
                break
        else:
            passages.append(Passage(type_name, hit, hit.content, hit.start_char, hit.end_char, hit.start_turn, hit.end_turn))
    return passages


def _label(type_name: str, hit: Hit) -> str:
    """``Decision: owner Maya; status current`` for extracted items; empty for chunks and segments."""
    spec = SEARCHABLE_TYPES.get(type_name)
    if spec is None or not spec.context_fields:
        return ""
    metadata = hit.metadata or {}
    fields = [f"{name.replace('_', ' ')} {metadata[name]}" for name in spec.context_fields if metadata.get(name)]
    return f"{type_name.capitalize()}: {'; '.join(fields)}\n" if fields else f"{type_name.capitalize()}:\n"


def _union(passage: Passage, result: Hit) -> Passage:
    if result.start_char < passage.start_char:
        head = result.content[: max(0, passage.start_char - result.start_char)]
        text, start = head + passage.text, result.start_char
    else:
        text, start = passage.text, passage.start_char
    end = passage.end_char
    if result.end_char > end:
        tail = result.content[max(0, end - result.start_char) :]
        text, end = text + ("\n" if result.start_char > end else "") + tail, result.end_char
    turns = [t for t in (passage.start_turn, passage.end_turn, result.start_turn, result.end_turn) if t is not None]
    return replace(
        passage, text=text, start_char=start, end_char=end,
        start_turn=min(turns) if turns else None, end_turn=max(turns) if turns else None,
    )  # fmt: skip


def build_context(
    ranked: Sequence[tuple[str, Hit]],
    max_tokens: int,
    count_tokens: Callable[[str], int],
    number: Callable[[Passage], int] | None = None,
) -> tuple[str, list[Passage]]:
    """The context string and the passages it cites, in citation order.

    ``number`` gives the citation number of a passage that fits (default: 1, 2, ... in order);
    the budget is checked with a four-digit number, so no number it gives can break it.
    """
    blocks: list[str] = []
    cited: list[Passage] = []
    used = 0
    for passage in merge_neighbours(ranked):
        where = (
            f"turns {passage.start_turn}-{passage.end_turn}"
            if passage.start_turn is not None
            else f"chars {passage.start_char}-{passage.end_char}"
        )
        hit = passage.hit
        day = (hit.metadata or {}).get("meeting_date")
        where = f"meeting of {day}, {where}" if day else where  # a later meeting's word overrides an earlier one's
        body = f"{hit.title or hit.source_uri} ({hit.source_uri}, {where})\n{_label(passage.type, hit)}{passage.text}"
        costed = f"[{9999 if number else len(cited) + 1}] {body}"
        cost = count_tokens(costed) + (2 if blocks else 0)  # the blank line between blocks
        if used + cost > max_tokens:
            continue  # a smaller passage further down may still fit
        blocks.append(f"[{number(passage)}] {body}" if number else costed)
        cited.append(passage)
        used += cost
    return "\n\n".join(blocks), cited
