"""Whether one sentence states a decision or a risk, by the cue patterns (rag.backfill.cues); rag.backfill.rules
describes the rules and finds the items."""

from __future__ import annotations

from rag.backfill.closures import CLOSED
from rag.backfill.cues import (
    BARE_CONDITIONAL_RISK,
    CLOSING_MARKER,
    CONCLUDES,
    CONDITIONAL_RISK,
    COUNTERFACTUAL,
    DECISION,
    HARM,
    HEDGED,
    LATE,
    LEADER_CONCLUSION,
    NAMED_CHOICE,
    NEGATIVE_CONDITION,
    NOT_DECISION,
    NOT_RISK,
    ON_A_DATE,
    PLAN_STATEMENT,
    PLANNED_RESPONSE,
    RISK,
    RUNNING_THE_MEETING,
    SCHEDULED,
    SET_AMOUNT,
    SETTLES_SOMETHING,
    VAGUE_RISK,
)
from rag.backfill.due_dates import names_a_date
from rag.backfill.text import clean
from rag.people import People


def leader_concludes(
    sentence: str, speaker: str | None, people: People | None, *, concluding: bool, accepted: bool, replying: bool
) -> bool:
    """Whether the meeting's leader settles something: after an acceptance, drawing the conclusion ("Then ...",
    "... instead"), or answering a discussion with "Okay, ..." that names what was settled ("Okay, a trailer and one
    full episode per show on launch day."), not running the meeting."""
    if people is None or not people.leads(speaker):
        return False
    raw, core = sentence.strip(), clean(sentence)
    closes = (
        replying
        and (concluding or CLOSING_MARKER.search(raw) is not None)
        and not RUNNING_THE_MEETING.search(core)
        and SETTLES_SOMETHING.search(core) is not None
    )
    return accepted or closes or LEADER_CONCLUSION.search(raw) is not None


def about_a_risk(core: str) -> bool:
    """Whether a sentence reports an earlier risk closed or talks about one ("the witness-slot worry is closed",
    "That's a risk for the season, then."): no new decision or risk."""
    return CLOSED.search(core) is not None or NOT_RISK.search(core) is not None


def states_a_decision(core: str, raw: str, concluding: bool, is_task: bool, leader_concludes: bool) -> bool:
    """Whether a sentence (``core``: without its leading fillers) states a decision; ``leader_concludes``: what the
    meeting's leader says settles it (``leader_concludes``)."""
    if NOT_DECISION.search(core) or about_a_risk(core):
        return False
    if DECISION.search(core) or NAMED_CHOICE.search(raw):
        return True
    if is_task or HEDGED.search(core):  # "Dan will open the account by August 31" is Dan's task
        return False
    if SET_AMOUNT.search(core):
        return True
    closing = concluding or CLOSING_MARKER.search(raw) is not None or CONCLUDES.search(core) is not None
    if leader_concludes and len(core.split()) >= 5:  # "Then book it now.": too little to be what was settled
        return True
    if (SCHEDULED.search(core) or (closing and ON_A_DATE.search(core))) and names_a_date(core):
        return True
    return closing and PLAN_STATEMENT.search(core) is not None


def states_a_risk(core: str) -> bool:
    """Whether a sentence states a risk: a cue ("risk", "may not", "could slip"), a dependency late, or a condition
    and its harm."""
    if CLOSED.search(core):  # "so I'm calling the delivery risk closed": a report on a risk, no new one
        return False
    if (bare := BARE_CONDITIONAL_RISK.search(core)) and HARM.search(bare["then"]):
        return True
    if conditional := CONDITIONAL_RISK.search(core):
        if HARM.search(conditional["then"]):
            return True
        counterfactual = COUNTERFACTUAL.search(conditional["if"])  # "if we hadn't done that, ..." looks back
        if NEGATIVE_CONDITION.search(conditional["if"]) and not (counterfactual or PLANNED_RESPONSE.search(conditional["then"])):
            return not PLANNED_RESPONSE.search(conditional["if"])
    if LATE.search(core):
        return True
    if not RISK.search(core) or NOT_RISK.search(core):
        return False
    return not (VAGUE_RISK.search(core) and len(core.split()) <= 8)
