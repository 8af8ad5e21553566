"""What the sentences around an item add to it: who took a request on, a deadline said next, a risk's mitigation.

Helpers of the offline extractor (rag.backfill.rules), over one segment's sentences in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from rag.backfill.cues import (
    ACCEPTED,
    ACCEPTS,
    BARE_MARKER,
    DEADLINE_FIRST,
    DELIVERY,
    MITIGATION,
    TAG_QUESTION,
)
from rag.backfill.due_dates import due_date
from rag.backfill.task_cues import REQUEST_OF_SOMEONE, SELF_COMMITMENT
from rag.backfill.text import clean, clip, content_words
from rag.backfill.units import Unit
from rag.people import People

DATE_ONLY_WORDS = 5  # "End of next week?", "Friday the 13th?": a sentence only naming a date


def follows_in_turn(units: Sequence[Unit], previous: int, position: int) -> bool:
    """Whether sentence ``position`` is the one after ``previous``, in the same turn."""
    return position == previous + 1 and units[position].turn is not None and units[position].turn == units[previous].turn


def agreed_proposal(units: Sequence[Unit], position: int) -> int:
    """The sentence an agreement at ``position`` agrees with: the one before, past a tag question ("Agreed?"); -1 when
    the agreement opens ``units``."""
    first = position - 1
    while first > 0 and TAG_QUESTION.match(units[first].text.strip()):
        first -= 1
    return first


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


def deadline_after(units: Sequence[Unit], position: int, meeting_date: date | None) -> tuple[date, int] | None:
    """The deadline one of the next two sentences of the turn adds to the work of sentence ``position``, and that
    sentence's position: "I'll profile the memory. I'll have numbers by Friday.", "Sure. Give me two weeks.",
    "By next Tuesday, so Sam can look at them.", "End of next week?"."""
    for following in range(position + 1, min(position + 3, len(units))):
        if units[following].turn is None or units[following].turn != units[position].turn:
            return None
        text = clean(units[following].text)
        if DEADLINE_FIRST.search(text) or DELIVERY.search(text) or len(text.split()) <= DATE_ONLY_WORDS:
            found = due_date(text, meeting_date)
            if found is not None:
                return found, following
    return None


def task_with_answer(
    units: Sequence[Unit], position: int, fields: dict[str, Any], people: People, meeting_date: date | None, answered: set[int]
) -> int:
    """Complete the task of sentence ``position`` (``fields``: its owner and date) from what follows it; returns its last
    sentence, and adds the sentences it took in to ``answered``."""
    assignee = people.canonical(fields["assignee"])
    last = position
    answer = accepting_answer(units, position, assignee, people) if REQUEST_OF_SOMEONE.search(clean(units[position].text)) else []
    if answer:
        # "Dana, can you ...?" / "Yes, I'll have it by Friday.": one task; the date the answer commits to, else the one
        # asked for.
        answered.update(answer)
        last = answer[-1]
        assignee = people.canonical(units[last].speaker)
        fields["due_date"] = next((d for p in answer if (d := due_date(clean(units[p].text), meeting_date))), fields["due_date"])
    # "I'll profile the memory. I'll have numbers by Friday.", "Aiko, would you ...? End of next week?": the deadline
    # follows the request or its answer, in the same task.
    # "Dan, can you ...? By the 14th of August, please." / "Yes, I can do that by the 14th.": the deadline said after
    # the request is part of it, whichever date the task keeps.
    for after in dict.fromkeys((position, last)):
        if deadline := deadline_after(units, after, meeting_date):
            fields["due_date"] = fields["due_date"] or deadline[0]
            answered.add(deadline[1])
            last = max(last, deadline[1])
    fields["assignee"] = assignee
    return last


def mitigation(units: Sequence[Unit], position: int) -> str | None:
    for unit in units[position + 1 : position + 4]:
        if MITIGATION.search(clean(unit.text)):
            return clip(clean(unit.text), 500)
    return None


RESTATED_WITHIN_TURNS = 2  # "We upgrade to 2022 LTS." - "Agreed, we upgrade to Unity 2022 LTS.": one decision
STEM_CHARS = 5  # "caption" / "captions", "month" / "months": a word's first letters stand for it


def restates(units: Sequence[Unit], previous: int, position: int, decided: str) -> bool:
    """Whether the sentence at ``position`` says again the decision ``decided`` that ended at sentence ``previous``,
    later in its turn or a turn or two later: both share two content words, or one's content words are all in the
    other ("Fifty-fifty it is.")."""
    earlier, later = units[previous].turn, units[position].turn
    if earlier is None or later is None or not 0 <= later - earlier <= RESTATED_WITHIN_TURNS:
        return False
    one, other = ({word[:STEM_CHARS] for word in content_words(text)} for text in (decided, units[position].text))
    shared = one & other
    return len(shared) >= 2 or bool(shared) and shared in (one, other)


def said_after(units: Sequence[Unit], position: int, first_in_turn: bool) -> dict[str, bool]:
    """What a sentence follows (rag.backfill.rules.classify's ``concluding``, ``accepted`` and ``replying``)."""
    previous = units[position - 1].text.strip() if position > 0 else ""
    concluding = not first_in_turn and BARE_MARKER.match(previous) is not None
    return {
        "concluding": concluding,
        "accepted": not first_in_turn and ACCEPTED.search(previous) is not None,
        "replying": answers_another(units, position) or (concluding and answers_another(units, position - 1)),
    }


def answers_another(units: Sequence[Unit], position: int) -> bool:
    """Whether the sentence opens a turn that answers another speaker."""
    before, unit = (units[position - 1], units[position]) if position > 0 else (None, None)
    return before is not None and unit is not None and before.turn != unit.turn and before.speaker != unit.speaker
