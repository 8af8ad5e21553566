"""What later meetings changed: which decision replaced which, which task is done, whose it is now.

Pure logic over a project's items in meeting order (``rag.store.timeline`` loads them and
writes the result back). Subjects are compared by their words: PostgreSQL's English stems
of each item's description (its ``search_tsv``), without people's names, dates and the
verbs every item uses ("send", "decide", "risk"), each weighted by how rare it is in the
project (inverse document frequency over its items and change statements). So the links
do not depend on the deployment's embedding model, and "the BOM" ties a report to the one
task about the BOM however differently the two are worded around it.

- Decisions: ``rag.supersession`` (a later decision replaces the earlier one on its subject).
- A change statement ("I sent the BOM on Friday", "Raj, could you take the runbook over?",
  "the certification risk is gone") changes the open task or risk of an earlier moment whose
  subject it shares most, counting the words of the statement and, at half weight, of what was
  said just before it (the question it answers); a report by the task's own owner counts extra.
  A new date its owner promises in a later meeting ("I'll have it to Northfield by the 25th") moves a task that was
  due within two weeks of that meeting to the later date; a promise about anything else moves nothing.
  A task whose words say nothing of what it is ("I'll take it.", "Can you draft that in two weeks?") is about what was
  said just before it in the transcript.
  A report done that names no open task by its words ("I spoke to both of them on the 16th") closes the one task its
  speaker owed by that meeting, if only one was due, once every change that names its task is applied.
  A task extracted from the very words of a handover or a new date ("James, could you take
  over the grant application?") is that earlier task's follow-up, not a task of its own: it
  shows the earlier task's state and no later change is linked to it.
  A task a later meeting's notes list under their action items that says most of an earlier open task's words
  ("Gareth Pryce: book the SALSA audit (taken over from Niamh), due 27 February") is that task listed again: its
  owner, due date and a done or cancelled status are the task's now, and it is the task's follow-up.
- A risk closed ("I think we can call the memory problem closed") closes, with the risk it names, every other open
  risk holding the words that named it: the same risk said again in other words ("Memory remains the biggest risk").
  Something reported done ("The fibre went live on the 1st") also closes the open risk it names, as a closure does,
  whether or not a task asked for it: the risk was that it would not happen. The report cites the task it closed,
  or else the risk.
- A chat model names the earlier item each change is about and is asked for risk closures itself: its change changes
  the item it names and nothing else, and its decisions of one meeting all stand (``rag.supersession``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import date
from typing import Any

from rag.subject_words import Weights, is_number, positions_by_word, positions_sharing, subject
from rag.supersession import CONTEXT_WEIGHT, decision_subject, link_decisions, proposed
from rag.timed import Moment, TaskState, TimedChange, TimedItem, Timeline

__all__ = ["Moment", "TaskState", "TimedChange", "TimedItem", "Timeline", "link"]

# Changes: the weight of the item's words the statement (or, at half weight, what came just before) says.
CHANGE_MIN_COVERAGE = 0.2
CLOSURE_MIN_COVERAGE = 0.05  # "the credit risk is closed": the cue says the rest
IMPLIED_MIN_COVERAGE = 0.1  # "The fibre went live": one rare word of the risk, said in a later meeting
PROMISE_WINDOW_DAYS = 14  # a promised date moves a task due within two weeks of the meeting that promises it
RELISTED_MIN_COVERAGE = 0.5  # a notes action item is the earlier task listed again when it says most of it
OWNER_REPORT_BONUS = 0.2  # a "done" or a new date said by the task's own owner, or naming them ("Gareth sent ...")


def link(items: Sequence[TimedItem], changes: Sequence[TimedChange], names: Iterable[str] = ()) -> Timeline:
    """Every item's effective state after all meetings (the rules are in the module docstring).

    ``names``: the stems of the project's people's names (not subject words).
    """
    people = frozenset(names)
    items = [_with_subject(item, people) for item in items]
    changes = [_with_subject(change, people) for change in changes]
    weights = Weights([i.words for i in items] + [c.words | c.context_words for c in changes])
    relisted = {-item.id: item for item in items if item.kind == "task" and item.listed}
    changes += [TimedChange(id_, item.at, "relisted", item.words) for id_, item in relisted.items()]
    timeline = Timeline()
    link_decisions([i for i in items if i.kind == "decision"], timeline, weights)
    for item in items:
        if item.kind == "risk":
            timeline.risk_status[item.id] = "closed" if item.stated.get("status") == "closed" else "open"
        elif item.kind == "task":
            timeline.tasks[item.id] = TaskState(
                status=str(item.stated.get("status") or "open"),
                assignee=item.stated.get("assignee"),
                due_date=_as_date(item.stated.get("due_date")),
            )
    candidates = sorted((i for i in items if i.kind in ("risk", "task")), key=lambda i: i.at)
    by_word = positions_by_word(item.words for item in candidates)
    follow_ups: dict[int, int] = {}  # a task made of a handover's or a new date's words -> the task it changes

    def sharing(change: TimedChange) -> list[TimedItem]:
        # Only items sharing a word can be linked by words; a model's named item may share none.
        if change.proposed_target:
            return candidates
        return [candidates[p] for p in positions_sharing(by_word, change.words | change.context_words)]

    reports: list[TimedChange] = []  # things reported done
    unnamed: list[TimedChange] = []  # reports that name no open task by its words
    for change in sorted(changes, key=lambda c: c.at):
        shared = sharing(change)
        if change.promised:  # the speaker's own task, due around this meeting, now promised for later
            shared = [item for item in shared if item.kind == "task" and _slipped(item, change, timeline)]
        target = _target(change, [c for c in shared if c.id not in follow_ups or c.kind != "task"], timeline, weights)
        timeline.change_targets[change.id] = (target.kind, target.id) if target else None
        reports += [change] if change.change == "done" else []
        unnamed += [change] if change.change == "done" and target is None else []
        if target is None:
            continue
        _apply(change, target, timeline, relisted.get(change.id))
        # "the memory problem is closed": every open risk about memory, said again or not
        if change.change == "closed" and not change.proposed_target:
            for item in _restatements(change, target, shared, timeline):
                timeline.risk_status[item.id] = "closed"
        if change.change in ("reassigned", "rescheduled", "relisted"):
            for item in candidates:
                if item.kind == "task" and item.id != target.id and item.spans(change.at):
                    follow_ups[item.id] = target.id
    # "The fibre went live on the 1st": the end of the risk it names (and of the task it answers), unless a closure said
    # so already. A model's report names what it changes, a risk it ends among them.
    for report in (r for r in reports if not r.proposed_target):
        closed = _target(replace(report, change="closed"), sharing(report), timeline, weights, implied=True)
        if closed is not None:
            timeline.change_targets[report.id] = timeline.change_targets[report.id] or ("risk", closed.id)
            timeline.risk_status[closed.id] = "closed"
    # "I spoke to both of them on the 16th.": the one task its speaker owed by then, once every report, cancellation
    # and new date that names its task is applied; not a report on a risk ("the landlord finished the cabling, so I'd
    # call the cabling risk closed")
    closures = {c.at for c in changes if c.change == "closed"}
    for report in unnamed:
        if timeline.change_targets[report.id] is not None or report.at in closures:
            continue
        if (task := _only_task_due(report, [c for c in candidates if c.id not in follow_ups], timeline)) is not None:
            timeline.change_targets[report.id] = ("task", task.id)
            _apply(report, task, timeline)
    for follow_up, original in follow_ups.items():
        timeline.tasks[follow_up] = timeline.tasks[original]
    for id_ in relisted:  # no statement of its own to store
        del timeline.change_targets[id_]
    return timeline


_REFERS_BACK = re.compile(r"\b(?:it|them|that|those|this|these)\b", re.I)


def _with_subject(thing: Any, names: frozenset[str]) -> Any:
    """An item or change with only its subject words (decisions also with the kind of value they set)."""
    if isinstance(thing, TimedItem) and thing.kind == "decision":
        return decision_subject(thing, names)
    # A task's numbers are mostly its due date's ("by February 13"): not what it is about.
    words = frozenset(w for w in subject(thing.words, names) if not is_number(w))
    if isinstance(thing, TimedItem):  # "I'll take it", "I'll get them booked": what was said just before says what
        context = frozenset(w for w in subject(thing.context_words, names) if not is_number(w))
        refers = len(words) <= 1 and _REFERS_BACK.search(thing.description) is not None
        return replace(thing, words=words | context if not words or refers else words)
    if isinstance(thing, TimedChange):
        context = frozenset(w for w in subject(thing.context_words, names) if not is_number(w))
        return replace(thing, words=words, context_words=context, named=thing.words & names)
    return replace(thing, words=words)


def _target(
    change: TimedChange, candidates: Sequence[TimedItem], timeline: Timeline, weights: Weights, *, implied: bool = False
) -> TimedItem | None:
    """The open item ``change`` changes; ``implied``: a report that closes a risk without saying so, which must name
    a risk of an earlier meeting as a report names its task."""
    wanted_kind = "risk" if change.change == "closed" else "task"
    open_now = [
        item
        for item in candidates
        if item.kind == wanted_kind and item.at < change.at and not item.spans(change.at) and _is_open(item, timeline)
        and not ((implied or change.change == "relisted") and item.at.same_meeting(change.at))
    ]  # fmt: skip
    named = proposed(change.proposed_target, open_now)
    if named is not None:
        return named
    closure = change.change == "closed" and not implied
    best: tuple[float, TimedItem] | None = None
    for item in open_now:
        said = change.words & item.words
        before = (change.context_words & item.words) - said
        shared_weight = weights.of(said) + CONTEXT_WEIGHT * weights.of(before)
        if not said and (not before or item.at.same_meeting(change.at)):
            continue  # within the meeting that set a task, what was just said is no report on it
        coverage = shared_weight / max(weights.of(item.words), 1e-9)
        if item.kind == "task" and change.change != "reassigned" and _owner_speaks(change, timeline.tasks[item.id]):
            coverage += OWNER_REPORT_BONUS
        if coverage < _min_coverage(change, implied):
            continue
        # A closure names its risk by a word or two of a long sentence: the rarest shared words decide.
        score = shared_weight + coverage if closure else coverage
        if best is None or score >= best[0]:
            best = (score, item)
    return best[1] if best else None


def _min_coverage(change: TimedChange, implied: bool) -> float:
    """How much of an item's subject ``change`` must say to change it."""
    if change.change == "closed" and not implied:
        return CLOSURE_MIN_COVERAGE
    if implied:
        return IMPLIED_MIN_COVERAGE
    return RELISTED_MIN_COVERAGE if change.change == "relisted" else CHANGE_MIN_COVERAGE


def _restatements(change: TimedChange, target: TimedItem, candidates: Sequence[TimedItem], timeline: Timeline) -> list[TimedItem]:
    """The other open risks before ``change`` holding every word by which it named ``target``: the same risk said again."""
    named = change.words & target.words
    if not named:
        return []
    return [
        item
        for item in candidates
        if item.kind == "risk" and item.id != target.id and item.at < change.at and not item.spans(change.at)
        and _is_open(item, timeline) and named <= item.words
    ]  # fmt: skip


def _only_task_due(change: TimedChange, candidates: Sequence[TimedItem], timeline: Timeline) -> TimedItem | None:
    """The one open task of an earlier meeting that the reporter owes (or the report names its owner: ``_owner_speaks``)
    and that fell due by this meeting, if only one did: a report by its owner names it whatever its words ("I spoke to
    both of them on the 16th")."""
    due = [
        item
        for item in candidates
        if item.kind == "task" and item.at < change.at and not item.at.same_meeting(change.at)
        and _is_open(item, timeline) and (task := timeline.tasks[item.id]).due_date is not None
        and task.due_date <= change.at.day and _owner_speaks(change, task)
    ]  # fmt: skip
    return due[0] if len(due) == 1 else None


def _slipped(item: TimedItem, change: TimedChange, timeline: Timeline) -> bool:
    """Whether a promised date moves ``item``: its owner promises it, in a later meeting, later than it was due, and
    it was due within ``PROMISE_WINDOW_DAYS`` of that meeting (an old task long overdue is not what a new promise is
    about, nor one far ahead)."""
    task, new = timeline.tasks[item.id], _as_date(change.new_value)
    if task.due_date is None or new is None or new <= task.due_date or item.at.same_meeting(change.at):
        return False
    return _owner_speaks(change, task) and abs((change.at.day - task.due_date).days) <= PROMISE_WINDOW_DAYS


def _is_open(item: TimedItem, timeline: Timeline) -> bool:
    if item.kind == "risk":
        return timeline.risk_status[item.id] == "open"
    return timeline.tasks[item.id].status in ("open", "blocked")


def _owner_speaks(change: TimedChange, task: TaskState) -> bool:
    """Whether the task's owner says the change, or is named in it (notes: "Margaret's margin model came in")."""
    owner = (task.assignee or "").casefold()
    named = bool(change.named) and any(part.strip("'’") in change.named for part in owner.split())
    return bool(owner) and (named or any(speaker.casefold() == owner for speaker in change.speakers))


def _apply(change: TimedChange, target: TimedItem, timeline: Timeline, listed: TimedItem | None = None) -> None:
    if target.kind == "risk":
        timeline.risk_status[target.id] = "closed"
        return
    task = timeline.tasks[target.id]
    if listed is not None:  # where the notes' list says the task stands now
        now = timeline.tasks[listed.id]
        task.assignee, task.due_date = now.assignee or task.assignee, now.due_date or task.due_date
        task.status = now.status if now.status in ("done", "cancelled") else task.status
    elif change.change in ("done", "cancelled"):
        task.status = change.change
    elif change.change == "reassigned" and change.new_value:
        task.assignee = change.new_value
    elif change.change == "rescheduled":
        task.due_date = _as_date(change.new_value) or task.due_date


def _as_date(value: object) -> date | None:
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(value) if isinstance(value, str) and value else None
    except ValueError:
        return None
