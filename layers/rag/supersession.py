"""Which decision replaced which, over a project's decisions in meeting order (``rag.timeline`` runs it; subjects are
compared by their weighted words, as ``rag.timeline`` says).

A decision supersedes the earlier *current* decision closest to it in subject (enough shared weight; within one
meeting only when it says it changes something: "actually", "instead", "go back", ...). A decision of a later meeting
that says it changes something ("we switch to Pedalink") also shares, at half weight, the words said just before
either of the two in a transcript ("we can't make June with Urbanvolt"): a change often names only the new choice.
When both name a choice (a name said capitalised: "Urbanvolt", "Pedalink"), different ones, and one was said around
the other, the change counts as saying the old value, as when its context says an earlier decision's day or amount.
That a decision starts, finishes or closes something is part of its subject, as launching is.

A later decision that only restates an earlier one is a restatement: no word of its own besides confirming ones, no
other day or amount of a kind the earlier one said ("reopens on 23 December, not the 18th" changes "reopens on Friday
18 December"; "Launch stays Monday 14 December" restates "launch on Monday the 14th"), and no change cue. It supersedes
nothing, and whatever later replaces it replaces the original too. A decision that meeting notes list under a heading
("## Decisions") is the meeting's record: it is linked before the notes' prose, and a decision of the prose on its
subject only restates it.

A chat model's proposed link (``stated["supersedes"]``: the earlier decision's description) is taken when it names an
earlier current decision; its ``null`` (it was shown the earlier decisions and named none) links nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from rag.subject_words import (
    MONTHS,
    WEEKDAYS,
    Weights,
    day_or_year,
    is_number,
    is_year,
    positions_by_word,
    positions_sharing,
    subject,
    value_kinds,
    values,
)
from rag.timed import TimedItem, Timeline

# Decisions: the shared words' weight over both decisions' (a weighted Dice coefficient).
DECISION_MIN_SIMILARITY = 0.25
DECISION_MIN_SHARED_WORDS = 2  # counting the kind of value both set (#date), and at least one word
CONTEXT_WEIGHT = 0.5  # the words said around an item, beside its own
OLD_VALUE = "=old value"  # a pseudo-word: a change's context says a value of the decision it replaces

# Words that say a decision replaces something (PostgreSQL English stems).
CHANGE_CUES = frozenset(
    {"actual", "instead", "chang", "switch", "move", "revers", "revert", "back", "drop", "replac", "longer",
     "rais", "cut", "cancel", "scrap", "overturn", "anymor", "rather", "reconsid", "updat", "switchov"}
)  # fmt: skip
_GOING = frozenset(
    {"go", "goe", "going", "went", "gone", "move", "moved", "moving", "come", "came", "coming", "push", "pushed",
     "put", "switch", "switched", "roll", "rolled", "revert", "reverted", "chang", "changed"}
)  # fmt: skip
# Words a restatement adds to what it restates ("we confirmed the May 19 date", "it stays at $89").
CONFIRMING = frozenset(
    {"confirm", "agre", "still", "stay", "reconfirm", "final", "decid", "decis", "date", "keep", "unchang", "remain",
     "otherwis", "same"}
)  # fmt: skip


WHEN_VERBS = frozenset({"start", "finish", "close"})  # noise to a task ("start on it"), a subject to a decision's date


def decision_subject(decision: TimedItem, names: frozenset[str]) -> TimedItem:
    """A decision with its subject words, the kind of value it sets ("launch May 5", "launch May 19": a date), its
    change cues and its values."""
    context = _topic(subject(decision.context_words, names))
    cues = frozenset(w for w in decision.words if _is_cue(w))  # "back", "new": noise to a subject, not to a change
    words = subject(decision.words, names) | value_kinds(decision.words) | cues | (decision.words & WHEN_VERBS)
    said_before = frozenset(v for v in values(decision.context_words) if not is_year(v))
    return replace(
        decision,
        words=words,
        context_words=context,
        values=values(decision.words),
        context_values=said_before,
        choices=_proper_names(decision.description, words),
    )


# A capitalised word inside a sentence (not the first word): a name ("with Urbanvolt", "to Arcway Mechanical").
_INNER_CAPITALISED = re.compile(r"(?<![.!?:;]\s)(?<=\s)[A-Z][\w-]*")
_DAY_NAMES = MONTHS | WEEKDAYS  # capitalised, but no choice


def _proper_names(description: str, words: frozenset[str]) -> frozenset[str]:
    """The subject words (stems) that are a name said capitalised inside a sentence of ``description``."""
    said = {token.casefold() for token in _INNER_CAPITALISED.findall(description)}
    return frozenset(
        w
        for w in words
        if not w.startswith("#")
        and w not in _DAY_NAMES
        and any(token.startswith(w) or token.startswith(w[:-1] + "y") for token in said)
    )


def _decision_order(decision: TimedItem) -> tuple[Any, ...]:
    """Meeting order; within a meeting, the decisions its notes list under a heading first: the record of what was
    decided replaces the earlier decisions, and the discussion around it only says it again."""
    at = decision.at
    return (at.day, at.uploaded, at.document_id, not decision.listed, at.position)


def link_decisions(decisions: Sequence[TimedItem], timeline: Timeline, weights: Weights) -> None:
    """Set ``timeline.superseded_by`` of every decision (with subject words: ``decision_subject``)."""
    decisions = sorted(decisions, key=_decision_order)
    restates: dict[int, int] = {}  # a restatement -> the decision it restates (the first statement)
    # A decision is linked by a shared subject word (not a #date alone), said or, for a change, said around either
    # decision: only those are compared.
    by_word = positions_by_word(frozenset(w for w in _topic(d.words) if not w.startswith("#")) for d in decisions)
    by_context_word = positions_by_word(d.context_words for d in decisions)
    by_value = positions_by_word(d.values for d in decisions)

    def current(earlier: Sequence[TimedItem]) -> list[TimedItem]:  # ``earlier``: decisions before, in decision order
        return [d for d in earlier if timeline.superseded_by[d.id] is None]

    for position, later in enumerate(decisions):
        timeline.superseded_by[later.id] = None
        before = decisions[:position]
        proposal = later.stated.get("supersedes")
        if "supersedes" in later.stated and proposal is None:
            continue  # a model was shown the earlier decisions and said it replaces none of them
        named = proposed(proposal, current(before)) if proposal else None
        topic, context = _topic(later.words), later.context_words if _changes_something(later) else frozenset()
        around = positions_sharing(by_context_word, topic) if context else []
        around += positions_sharing(by_value, later.context_values) if context else []
        sharing = [decisions[p] for p in sorted({*positions_sharing(by_word, topic | context), *around}) if p < position]
        earlier = named or _closest_decision(later, current(sharing), weights)
        if earlier is None:
            continue
        original = restates.get(earlier.id, earlier.id)
        # a model that names what a decision replaces has read both: no words of ours say it only repeats it
        if not named and (_restates(later, earlier) or (earlier.listed and earlier.at.same_meeting(later.at))):
            restates[later.id] = original
            continue
        for replaced in current(before):  # the decision and every restatement of it
            if restates.get(replaced.id, replaced.id) == original:
                timeline.superseded_by[replaced.id] = later.id


def _restates(later: TimedItem, earlier: TimedItem) -> bool:
    """Whether ``later`` only says ``earlier`` again: no change cue, and nothing new besides confirming words (no
    other day or amount: "reopens on 23 December, not the 18th" changes "reopens on Friday 18 December")."""
    new_words = _days(later.words) - _days(earlier.words) - CONFIRMING
    said_before = {_value_kind(value) for value in earlier.values}  # "Monday the 14th" -> "Monday 14 December": same
    new_values = [value for value in later.values - earlier.values if _value_kind(value) in said_before]
    return not (_changes_something(later) or new_words or new_values)


def _value_kind(value: str) -> str:
    return "month" if value in MONTHS else "weekday" if value in WEEKDAYS else "number"


def _days(words: frozenset[str]) -> frozenset[str]:
    """Without a date's day and year ("Go-live stays on Monday 16 March" says "Monday the 16th of March" again: the
    ordinal is no subject word, the number is); the kind of value (``#date``) stays."""
    return frozenset(w for w in words if not ("#date" in words and day_or_year(w)))


def proposed(description: object, candidates: Sequence[TimedItem]) -> TimedItem | None:
    """The candidate a chat model named by its description, if any."""
    if not isinstance(description, str) or not description.strip():
        return None
    wanted = " ".join(description.split()).casefold()
    named = [c for c in candidates if " ".join(c.description.split()).casefold() == wanted]
    return named[-1] if named else None


def _closest_decision(later: TimedItem, candidates: Sequence[TimedItem], weights: Weights) -> TimedItem | None:
    best: tuple[float, TimedItem] | None = None
    for earlier in candidates:
        if earlier.at.same_meeting(later.at) and (later.by_model or not _changes_something(later)):
            # within one meeting, only a stated change replaces what was just decided; a model's decisions are what
            # the meeting settled, and all stand
            continue
        later_subject, earlier_subject = _topic(later.words), _topic(earlier.words)
        said = later_subject & earlier_subject
        around: frozenset[str] = frozenset()
        if _compares_around(later, earlier):
            around = _said_around(later, earlier) - said
            if later.context_values & earlier.values or _swaps(later, earlier):
                around |= {OLD_VALUE}  # "April is not happening." / "We move to Sunday 30 May.": the old value said
        shared = said | around
        both = weights.of(later_subject) + weights.of(earlier_subject)
        similarity = 2 * (weights.of(said) + CONTEXT_WEIGHT * weights.of(around)) / both if both else 0.0
        if (
            len(shared) >= DECISION_MIN_SHARED_WORDS
            and any(not word.startswith("#") for word in shared)
            and similarity >= DECISION_MIN_SIMILARITY
            and (best is None or similarity >= best[0])
        ):
            best = (similarity, earlier)
    return best[1] if best else None


def _said_around(later: TimedItem, earlier: TimedItem) -> frozenset[str]:
    """The subject words of one decision said just before the other ("we can't make June with Urbanvolt." / "we
    switch to Pedalink"; "Pedalink can do ten weeks." / "we go with Urbanvolt"): compared when ``later`` states a
    change in a later meeting."""
    return (later.context_words & _topic(earlier.words)) | (_topic(later.words) & earlier.context_words)


def _swaps(later: TimedItem, earlier: TimedItem) -> bool:
    """Whether ``later`` names another choice than ``earlier`` where one was said around the other ("Pedalink can do
    ten." / "We go with Urbanvolt"; "we can't make June with Urbanvolt." / "We switch to Pedalink")."""
    if not later.choices or not earlier.choices or later.choices & earlier.choices:
        return False
    return bool(earlier.choices & later.context_words or later.choices & earlier.context_words)


def _compares_around(later: TimedItem, earlier: TimedItem) -> bool:
    return not earlier.at.same_meeting(later.at) and _changes_something(later)


def _is_cue(word: str) -> bool:
    """A change cue, or a verb that goes back ("go back", "moved back": ``rag.store.timeline`` joins the two)."""
    return word in CHANGE_CUES or (word.endswith("back") and word[:-4] in _GOING)


def _changes_something(decision: TimedItem) -> bool:
    return any(_is_cue(word) for word in decision.words)


def _topic(words: frozenset[str]) -> frozenset[str]:
    """A decision's subject: without the values a change replaces ("May 19" -> "May 26") or the change's own words."""
    return frozenset(w for w in words if not _is_cue(w) and w not in CONFIRMING and not is_number(w))
