"""The offline extractor: transparent cue phrases and patterns (rag.backfill.cues), one sentence at a time.

It favours precision over recall (it misses what is implied, it rarely invents) and
its precision is measured on a hand-labelled sample (tests/fixtures/backfill/
labelled_sentences.jsonl, reported by tests/backfill/measure_rules_precision.py).

A sentence, after leading fillers ("okay, so, right, ...") are dropped, is a

- decision when it says so: "we decided / agreed", "we've decided", "let's / we'll go
  with", "we're going with", "the (final) decision is", "settled on", "let's decide",
  "let's take / use / keep / stick with", or it starts with "Agreed" (a bare "Agreed."
  takes the previous sentence as what was agreed); or a plan stated as settled in the
  present ("we move / ship / drop / keep ...", "we're launching ..."), a constraint stated
  as fixed ("X is capped at / adopted / approved", "the tool is X, not Y", "X stays open /
  moves to ...", "it's a go"); or the meeting's leader (who takes the most turns) concluding
  a discussion: right after accepting a proposal ("Then let's do it.", "... but fine."), or
  drawing the conclusion ("Then ...", "... instead", "from now on", "Albert Street it is, then"), or answering
  the discussion with "Okay, ..." / "Fine, ..." that names what was settled (an amount, a name, what "we" do:
  "Okay, a trailer and one full episode per show on launch day"), not running the meeting ("Okay, next, the
  studio bookings").
  Not: "haven't decided", "let's not", "keep an eye on",
  the chair giving the floor ("we go back to Mr. ...").
  Status "agreed"; rationale: the clause after "because" / "since".
- risk: "risk(s)", "concern(ed)", "worried / worry", "danger", "bottleneck", "blocker",
  "might not", "may not", "could delay / slip / fail / break / push", "the problem /
  issue is that", "if ... slips / fails / misses", a condition followed by a harm ("if X,
  we can't / it could brick / they're late"; not "if you ..."). Not: "no risk", "low risk",
  "not sure", "risk assessment", a short alarm without content ("that's a risk too"). Category from keywords (schedule, cost, technical,
  security, supplier, people); mitigation: a following sentence of the segment that
  starts "we can / we could / to mitigate".
- opportunity: "opportunity", "we could also", "potential to / there's potential",
  "could save", "upsell", "new market", "could expand / grow / win / sell". Type from
  keywords (sales, cost saving, product, hiring, partnership).
- task: a commitment ("I'll / I will / I'm going to <verb>": the speaker), an
  assignment ("<Name> will", "the <role> will", "<Name>, please / can you", "action item for <Name>"), a
  request opening the sentence ("please", "can / could you": the addressee when named, else the next
  speaker when they answer "sure / will do / I'll"; not "please note / wait"), or "we need to" with a
  deadline; a question is no one's commitment. Due date: the
  deadline the sentence names, resolved against the meeting date (rag.backfill.due_dates).
  Assignee: the person's one form among the meeting's speakers (rag.people).
Questions are never decisions, risks or opportunities.

``extract_by_rules`` adds to the patterns' kinds those the sentence classifier (rag.backfill.classifier, trained on
labelled meetings) finds above its precision thresholds (``classify_with_model``); the fields come from the helpers below.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date
from typing import Any

from rag.backfill.cues import (
    AGREES,
    DEADLINE_FIRST,
    NOT_DECISION,
    OPPORTUNITY,
    OPPORTUNITY_TYPES,
    RATIONALE,
    RISK_CATEGORIES,
    SMALL_TALK,
)
from rag.backfill.due_dates import due_date, names_a_date
from rag.backfill.models import ItemKind, KnowledgeItem
from rag.backfill.neighbours import (
    DATE_ONLY_WORDS,
    agreed_proposal,
    follows_in_turn,
    mitigation,
    restates,
    said_after,
    task_with_answer,
)
from rag.backfill.statements import about_a_risk, leader_concludes, states_a_decision, states_a_risk
from rag.backfill.task_cues import (
    ACTION_ITEM,
    ASKS_TO_TALK,
    FIRST_PERSON_FUTURE,
    GIVES_THE_FLOOR,
    NAMED_COMMITMENT,
    NOT_NAMES,
    NOT_WORK,
    OFFER,
    REQUEST,
    REQUEST_OF_SOMEONE,
    ROLE_COMMITMENT,
    SELF_COMMITMENT,
    VOCATIVE_ORDER,
    VOCATIVE_REQUEST,
    WE_NEED_TO,
    WH_QUESTION,
)
from rag.backfill.text import clean, clip
from rag.backfill.units import Unit
from rag.people import People

__all__ = ["Match", "classify", "clean", "due_date", "extract_by_rules"]


@dataclass(frozen=True)
class Match:
    kind: ItemKind
    fields: dict[str, Any]


def classify(
    sentence: str,
    speaker: str | None = None,
    meeting_date: date | None = None,
    *,
    concluding: bool = False,
    accepted: bool = False,
    replying: bool = False,
    people: People | None = None,
) -> list[Match]:
    """The kinds of item one sentence states, with the fields the rules can fill. ``concluding``: the sentence
    follows a bare "Okay." / "Right." of its own turn; ``accepted``: it follows an acceptance of a proposal ("Then
    let's do it."), which settles what the meeting's leader says next; ``replying``: it opens a turn that answers another
    speaker (after a bare "Okay." too), where the leader's "Okay, ..." is what a discussion came to; ``people``: the meeting's, to tell "Dana will ..." (a
    person) from "Staff will ..." (a sentence's first word)."""
    core = clean(sentence)
    question = core.endswith("?")
    found: list[Match] = []
    assignee, is_task = _task(core, speaker, people)
    concludes = leader_concludes(sentence, speaker, people, concluding=concluding, accepted=accepted, replying=replying)
    if not question and states_a_decision(core, sentence.strip(), concluding, is_task and assignee is not None, concludes):
        why = RATIONALE.search(core)
        found.append(Match("decision", {"status": "agreed", "rationale": why["why"].rstrip(".") if why else None}))
    if not question and states_a_risk(core):
        found.append(Match("risk", {"category": keyword_class(core, RISK_CATEGORIES, "general")}))
    if not question and OPPORTUNITY.search(core):
        found.append(Match("opportunity", {"type": keyword_class(core, OPPORTUNITY_TYPES, "general")}))
    if is_task:
        found.append(Match("task", {"assignee": assignee, "due_date": due_date(core, meeting_date), "status": "open"}))
    return found


def classify_with_model(
    sentence: str,
    speaker: str | None,
    meeting_date: date | None,
    first_in_turn: bool,
    last_in_turn: bool,
    previous: str | None = None,
    following: str | None = None,
    *,
    concluding: bool = False,
    accepted: bool = False,
    replying: bool = False,
    people: People | None = None,
) -> list[Match]:
    """The patterns' kinds plus those the sentence classifier (rag.backfill.classifier) finds above its
    precision thresholds, with the fields the patterns fill; a kind both find is one match. ``previous`` and
    ``following`` are the neighbouring sentences of the segment (the classifier reads an answer, an agreement)."""
    from rag.backfill.classifier import classify_sentence, kinds_of

    found = classify(sentence, speaker, meeting_date, concluding=concluding, accepted=accepted, replying=replying, people=people)
    have = {match.kind for match in found}
    core = clean(sentence)
    probabilities = classify_sentence(
        sentence, speaker, first_in_turn=first_in_turn, last_in_turn=last_in_turn, previous=previous, following=following
    )
    on_a_risk = about_a_risk(core)
    for kind in kinds_of(probabilities):
        if kind in have or (on_a_risk and kind in ("decision", "risk")):
            continue
        if kind == "decision" and NOT_DECISION.search(core):  # watching, deferring, running the meeting
            continue
        if kind == "decision":
            why = RATIONALE.search(core)
            found.append(Match("decision", {"status": "agreed", "rationale": why["why"].rstrip(".") if why else None}))
        elif kind == "risk":
            found.append(Match("risk", {"category": keyword_class(core, RISK_CATEGORIES, "general")}))
        elif kind == "opportunity":
            found.append(Match("opportunity", {"type": keyword_class(core, OPPORTUNITY_TYPES, "general")}))
        elif kind == "task":
            if _talk_not_work(core):
                continue
            assignee = _task(core, speaker, people)[0] if len(core.split()) >= 3 else None
            # "I can have them recruited by the 15th", "Let me ask our data team": the speaker's own; "Gareth, could you
            # talk to the airlines?" (which the patterns leave to meeting talk) is Gareth's
            vocative = VOCATIVE_REQUEST.search(core)
            assignee = assignee or (vocative["name"] if vocative else None)
            # "When can we see it?" / "By the 6th of November.": a deadline opening a turn answers for the speaker's work
            answers_when = first_in_turn and DEADLINE_FIRST.match(core) is not None and len(core.split()) <= DATE_ONLY_WORDS
            offers = OFFER.search(core) or FIRST_PERSON_FUTURE.search(core) or answers_when
            assignee = assignee or (speaker if offers else None)
            found.append(Match("task", {"assignee": assignee, "due_date": due_date(core, meeting_date), "status": "open"}))
    return found


def _agreeable(proposal: str) -> bool:
    """Whether agreeing with ``proposal`` settles something: not what no decision is (a preference, watching,
    running the meeting) nor talk about a risk."""
    return NOT_DECISION.search(proposal) is None and not about_a_risk(proposal)


def _talk_not_work(core: str) -> bool:
    """Talk the classifier may read as a task: asking for an answer now ("Owen, can you take us through the layout?"),
    asking what ("What about the pilot, anything we need to do before the 15th?"), or only the speaker's own future
    that is no work ("I'll see you all next Tuesday")."""
    if GIVES_THE_FLOOR.search(core) or _asks_or_chats(core):
        return True
    said = len(FIRST_PERSON_FUTURE.findall(core))
    return said > 0 and said == len(NOT_WORK.findall(core)) and not REQUEST_OF_SOMEONE.search(core)


def _asks_or_chats(core: str) -> bool:
    """A wh-question or pleasantries: no task, whoever reads one."""
    return WH_QUESTION.match(core) is not None or SMALL_TALK.search(core) is not None


def _task(core: str, speaker: str | None, people: People | None = None) -> tuple[str | None, bool]:
    if len(core.split()) < 3 or ASKS_TO_TALK.search(core) or _talk_not_work(core):
        return None, False
    if SELF_COMMITMENT.search(core):
        return speaker, True
    if vocative := VOCATIVE_REQUEST.search(core):
        return vocative["name"], True
    if (order := VOCATIVE_ORDER.search(core)) and names_a_date(core):
        return order["name"], True
    question = core.endswith("?")  # "Or will that change?" asks; a request may ask
    if not question and (named := NAMED_COMMITMENT.search(core)) and _names_someone(named, people):
        return named["name"], True
    if not question and (role := ROLE_COMMITMENT.search(core)):
        return role["role"], True
    if action := ACTION_ITEM.search(core):
        return action["name"], True
    # "we need to do better" is a duty; "we need to send the forms by Friday" is work with a deadline
    if REQUEST.search(core) or (WE_NEED_TO.search(core) and names_a_date(core)):
        return None, True
    return None, False


def _names_someone(named: re.Match[str], people: People | None) -> bool:
    """Whether "<Word> will ..." names a person: any capitalized word inside a sentence, but its first word
    ("Staff will submit ...", "Nights will join ...") only when it is someone the meeting knows (notes, which have
    no speakers to know, give it the benefit of the doubt)."""
    if named["name"] in NOT_NAMES:
        return False
    return named.start() > 0 or people is None or not people.names or people.knows(named["name"])


def keyword_class(text: str, classes: dict[str, tuple[str, ...]], default: str) -> str:
    lowered = text.lower()
    for name, words in classes.items():
        if any(word in lowered for word in words):
            return name
    return default


def extract_by_rules(
    units: Sequence[Unit], segment_id: int | None, meeting_date: date | None, people: People | None = None
) -> list[KnowledgeItem]:
    """Items of one segment's sentences, in order; a task's assignee in the one form ``people`` knows
    (by default the segment's speakers)."""
    people = people or People.of(unit.speaker for unit in units)
    items: list[KnowledgeItem] = []
    answered: set[int] = set()  # sentences that took on a request: part of its task, not tasks of their own
    decided_at: tuple[int, int, int] | None = None  # the last decision's first and last sentence, index in ``items``
    going_on: dict[str, tuple[int, int, int]] = {}  # risk, task: the last one's first and last sentence, index in ``items``
    for position, unit in enumerate(units):
        first_in_turn = unit.turn is None or position == 0 or units[position - 1].turn != unit.turn
        last_in_turn = unit.turn is None or position == len(units) - 1 or units[position + 1].turn != unit.turn
        previous = units[position - 1].text if position > 0 else None
        following = units[position + 1].text if position + 1 < len(units) else None
        matches = classify_with_model(
            unit.text, unit.speaker, meeting_date, first_in_turn, last_in_turn, previous, following,
            people=people, **said_after(units, position, first_in_turn),
        )  # fmt: skip
        for match in matches:
            if match.kind == "task" and position in answered:
                continue
            fields = dict(match.fields)
            description = clean(unit.text)
            first = last = position
            agreement = match.kind == "decision" and (len(description.split()) <= 2 or AGREES.match(description) is not None)
            if agreement and (first := agreed_proposal(units, position)) < 0:
                continue  # "Agreed." opening the segment: what it agrees with is not in it
            if agreement and not _agreeable(clean(units[first].text)):
                continue  # agreeing with a preference, a worry or its end ("I'd rather we didn't ...", "Agreed.")
            description = clean(units[first].text)  # "Agreed.": what was agreed is said before
            if match.kind == "task":
                last = task_with_answer(units, position, fields, people, meeting_date, answered)
            if match.kind == "risk":
                fields["mitigation"] = mitigation(units, position)
            if match.kind == "decision" and decided_at is not None:
                decided = items[decided_at[2]]
                said_again = follows_in_turn(units, decided_at[1], position) or (agreement and decided_at[1] >= first)
                if said_again or restates(units, decided_at[1], position, decided.description):
                    # One decision said twice: in the next sentence or agreed to ("Then let's go to a hundred and
                    # fifty. Tickets are $150 this year."), the later sentence (usually the precise one, or the
                    # proposal agreed to) describes it; later in the turn or a turn or two on ("We upgrade to 2022
                    # LTS." - "Agreed, we upgrade to Unity 2022 LTS."), the fuller words.
                    if not said_again:
                        description = max(description, decided.description, key=lambda words: len(words.split()))
                        fields = _kept(fields, decided)
                    start = min(first, decided_at[0])
                    items[decided_at[2]] = _item(match.kind, units[start : last + 1], description, segment_id, fields)
                    decided_at = (start, last, decided_at[2])
                    continue
            if match.kind == "decision":
                decided_at = (first, last, len(items))
            if (
                (earlier := going_on.get(match.kind))
                and follows_in_turn(units, earlier[1], position)
                and (match.kind == "risk" or items[earlier[2]].fields.get("assignee") == fields.get("assignee"))
            ):
                # "Every can picks up oxygen. If it comes out above the limit, the beer goes stale.", "I'll look at it
                # properly. I'll give you an answer by Friday.": one risk, its cause and what follows; one piece of
                # work and its deadline. The first sentence names it.
                span, item = units[earlier[0] : last + 1], items[earlier[2]]
                items[earlier[2]] = replace(
                    item, evidence=" ".join(u.text for u in span), end_char=span[-1].end_char, end_turn=span[-1].turn,
                    fields=_kept(fields, item),
                )  # fmt: skip
                going_on[match.kind] = (earlier[0], last, earlier[2])
                continue
            if match.kind in ("risk", "task"):
                going_on[match.kind] = (first, last, len(items))
            items.append(_item(match.kind, units[first : last + 1], description, segment_id, fields))
    return items


def _item(
    kind: ItemKind, span: Sequence[Unit], description: str, segment_id: int | None, fields: dict[str, Any]
) -> KnowledgeItem:
    return KnowledgeItem(
        kind=kind,
        description=clip(description, 500),
        evidence=" ".join(u.text for u in span),
        start_char=span[0].start_char,
        end_char=span[-1].end_char,
        method="rules",
        segment_id=segment_id,
        start_turn=span[0].turn,
        end_turn=span[-1].turn,
        speakers=tuple(dict.fromkeys(u.speaker for u in span if u.speaker)),
        fields=fields,
    )


def _kept(fields: dict[str, Any], earlier: KnowledgeItem) -> dict[str, Any]:
    """The fields of one item said over two places: what the earlier place said, the later filling the gaps."""
    return {**fields, **{k: v for k, v in earlier.fields.items() if v is not None}}
