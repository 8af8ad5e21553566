"""What the sentences around an item add to it: who took a request on, a deadline said next, a risk's mitigation.

Helpers of the offline extractor (rag.backfill.rules), over one segment's sentences in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from rag.backfill.cues import ACCEPTS, DEADLINE_FIRST, MITIGATION, SELF_COMMITMENT
from rag.backfill.due_dates import due_date
from rag.backfill.text import clean, clip
from rag.backfill.units import Unit
from rag.people import People


def follows_in_turn(units: Sequence[Unit], previous: int, position: int) -> bool:
    """Whether sentence ``position`` is the one after ``previous``, in the same turn."""
    return position == previous + 1 and units[position].turn is not None and units[position].turn == units[previous].turn


def accepting_answer(units: Sequence[Unit], position: int, addressee: str | None, people: People) -> list[int]:
    """The sentences of the next turn that take a request on ("Sure.", "Yes. I'll have it by Friday."):
    another speaker's, the addressee's when the request names one; empty when no one says yes."""
    here = units[position]
    for start in range(position + 1, min(position + 4, len(units))):
        unit = units[start]
        if unit.turn == here.turn:
            continue
        if not unit.speaker or unit.speaker == here.speaker:
            return []
        if addressee is not None and people.canonical(unit.speaker) != addressee:
            return []
        turn = [p for p in range(start, min(start + 2, len(units))) if units[p].turn == unit.turn]
        for end in turn:
            if SELF_COMMITMENT.search(clean(units[end].text)):
                return list(range(start, end + 1))
        return [start] if ACCEPTS.search(unit.text.strip()) else []
    return []


def deadline_after(text: str, meeting_date: date | None) -> date | None:
    """The date of a sentence that only adds a deadline ("By next Tuesday, so Sam can look at them.")."""
    return due_date(text, meeting_date) if DEADLINE_FIRST.match(text) else None


def mitigation(units: Sequence[Unit], position: int) -> str | None:
    for unit in units[position + 1 : position + 4]:
        if MITIGATION.search(clean(unit.text)):
            return clip(clean(unit.text), 500)
    return None
