"""The project's earlier items as a chat model sees them (E1, E2, ...), and links a model draws to them.

The extract prompt lists them so that the model can say what a meeting's lines replace, close or
complete. Decisions a notes section lists are taken as written (``rag.backfill.sections``) and never
go through that prompt, so the link a model gives its own decisions is asked for them separately,
in one call per document (``link_listed``): without it, what a listed decision replaces would only
be guessed from shared words. The extract prompt also shows what the document lists under its own
headings (``listed_items_prompt``), which the model does not read as lines, so that it does not take
a decision again from the notes' prose.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import date
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from rag.backfill.models import KnowledgeItem
from rag.backfill.repository import EarlierItem

if TYPE_CHECKING:
    from rag.config import Settings


MAX_LISTED_SHOWN = 60  # what a prompt can hold next to a segment and the earlier items (repository.MAX_EARLIER_ITEMS)


def earlier_items_prompt(earlier: Sequence[EarlierItem]) -> str:
    """The project's earlier open items as the model sees them: ``E<n> (kind, date): description``."""
    if not earlier:
        return ""
    lines = [
        f"E{n} ({item.kind}, {item.meeting_date.isoformat() if item.meeting_date else 'undated'}): {item.description}"
        for n, item in enumerate(earlier, 1)
    ]
    return "Earlier items of this project that are still current or open:\n" + "\n".join(lines) + "\n\n"


def listed_items_prompt(listed: Sequence[KnowledgeItem]) -> str:
    """What the document lists under its own headings (``## Decisions`` ...), which the model does not read: shown so
    that it does not take the same decision again from the notes' prose ("We agreed to take £10,000 from reserves")."""
    if not listed:
        return ""
    lines = [f"- {item.kind}: {item.description}" for item in listed[:MAX_LISTED_SHOWN]]
    return "Items this document already lists under its own headings (do not extract them again):\n" + "\n".join(lines) + "\n\n"


def named_earlier(label: str | None, earlier: Sequence[EarlierItem], kind: str) -> str | None:
    """The description of the earlier item ``label`` (``E<n>``) names, if it is one of ``kind``."""
    digits = (label or "").strip().upper().removeprefix("E")
    if not digits.isdigit() or not 1 <= int(digits) <= len(earlier):
        return None
    item = earlier[int(digits) - 1]
    return item.description if item.kind == kind else None


class ListedLink(BaseModel):
    listed: str = Field(description="the label (L1, L2, ...) of a decision the notes list")
    supersedes: str = Field(description="the label (E1, E2, ...) of the earlier decision it replaces")


class ListedDecisionLinks(BaseModel):
    links: list[ListedLink] = Field(description="one entry per listed decision that replaces an earlier one")


LINK_SYSTEM_PROMPT = (
    "A meeting's notes list decisions, labelled L1, L2, ...; the user also lists the project's earlier decisions "
    "that are still current, labelled E1, E2, .... For each listed decision that replaces an earlier decision "
    "(changes, reverses or overrides what it decided on the same matter), give both labels. A listed decision that "
    "only repeats or confirms an earlier one, or decides something new, replaces nothing: leave it out."
)


def link_listed(
    items: Sequence[KnowledgeItem], earlier: Sequence[EarlierItem], meeting_date: date | None, settings: Settings
) -> list[KnowledgeItem]:
    """``items`` with the earlier decision each listed decision replaces (``fields["supersedes"]``), as a model says.

    No call when nothing could be linked: no listed decision, or no earlier current decision.
    """
    listed = [p for p, item in enumerate(items) if item.kind == "decision" and item.method == "sections"]
    decisions = [item for item in earlier if item.kind == "decision"]
    if not listed or not decisions:
        return list(items)
    from rag.llm import structured_completion

    meeting = f"Meeting date: {meeting_date.isoformat()}\n" if meeting_date else ""
    numbered = "\n".join(f"L{n}: {items[position].description}" for n, position in enumerate(listed, 1))
    answer = structured_completion(
        settings,
        system=LINK_SYSTEM_PROMPT,
        user=earlier_items_prompt(decisions) + meeting + "Decisions these notes list:\n" + numbered,
        response_model=ListedDecisionLinks,
    )
    replaces: dict[int, str | None] = dict.fromkeys(listed)  # a listed decision the model leaves out replaces nothing
    for link in answer.links:
        digits = link.listed.strip().upper().removeprefix("L")
        replaced = named_earlier(link.supersedes, decisions, "decision")
        if digits.isdigit() and 1 <= int(digits) <= len(listed) and replaced is not None:
            replaces[listed[int(digits) - 1]] = replaced
    return [
        replace(item, fields={**item.fields, "supersedes": replaces[position]}) if position in replaces else item
        for position, item in enumerate(items)
    ]
