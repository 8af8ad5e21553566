"""rag.timeline: supersession chains, restatements, and change statements linked to the open item they name."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

from rag.timeline import Moment, TimedChange, TimedItem, link


def at(day: int, position: int = 0, meeting: str | None = None) -> Moment:
    return Moment(date(2026, 3, day), float(day), meeting or f"m{day}", position)


def words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def decision(id_: int, moment: Moment, text: str, **stated: object) -> TimedItem:
    return TimedItem("decision", id_, moment, words(text), text, dict(stated))


def task(id_: int, moment: Moment, text: str, assignee: str | None = None, due: str | None = None) -> TimedItem:
    stated = {"assignee": assignee, "due_date": due, "status": "open"}
    return TimedItem("task", id_, moment, words(text), text, stated)


def change(id_: int, moment: Moment, kind: str, text: str, **fields: object) -> TimedChange:
    return TimedChange(id_, moment, kind, words(text), **fields)  # type: ignore[arg-type]


def test_a_later_decision_on_the_same_subject_supersedes_and_reversals_chain():
    items = [
        decision(1, at(2), "launch may 5"),
        decision(2, at(2, 10), "price 89 retail"),
        decision(3, at(9), "move launch may 19"),
        decision(4, at(16), "move launch may 26 everywher"),
    ]
    timeline = link(items, [])
    assert timeline.superseded_by == {1: 3, 2: None, 3: 4, 4: None}


def test_a_restatement_supersedes_nothing_and_what_replaces_it_replaces_the_original():
    items = [
        decision(1, at(2), "target warehous bigqueri"),
        decision(2, at(9), "target warehous bigqueri confirm"),  # said again, nothing new
        decision(3, at(16), "target warehous snowflak bigqueri"),  # "Snowflake, not BigQuery"
    ]
    assert link(items, []).superseded_by == {1: 3, 2: 3, 3: None}


def test_a_decision_the_notes_list_is_the_meeting_s_record_and_the_discussion_only_says_it_again():
    notes = "m9"
    items = [
        decision(1, at(2), "venu riversid hall"),
        # the prose of the notes, then the same decision under "## Decisions"
        decision(2, at(9, 10, notes), "everyon agre move back venu harbour hall instead riversid"),
        replace(decision(3, at(9, 80, notes), "venu back harbour hall"), listed=True),
        decision(4, at(16), "venu switch riversid hall harbour hall booked"),
    ]
    timeline = link(items, [])
    # the listed decision replaces the first; the prose restates it, so what replaces one replaces both
    assert timeline.superseded_by == {1: 3, 2: 4, 3: 4, 4: None}


def test_decisions_of_one_meeting_stand_side_by_side_unless_one_says_it_changes_the_other():
    items = [
        decision(1, at(2, 0, "m"), "ship color graphit sand"),
        decision(2, at(2, 50, "m"), "ship color packag recycl"),  # same meeting, no change cue: both stand
        decision(3, at(2, 90, "m"), "actual ship color graphit white"),  # "actually, ...": replaces the first
        decision(4, at(2, 95, "m"), "retail price 89"),
        decision(5, at(3, 0, "k"), "old carnegi build close public saturday 21 novemb"),
        decision(6, at(3, 40, "k"), "librari reopen new civic centr build monday 11 januari"),  # "new" changes nothing
    ]
    assert link(items, []).superseded_by == {1: 3, 2: None, 3: None, 4: None, 5: None, 6: None}


def test_a_new_value_of_the_same_thing_supersedes_it_with_one_word_in_common():
    items = [
        decision(1, at(2), "stay 2021 lts port"),  # "We stay on 2021 LTS for the port."
        decision(2, at(2, 40), "calibr rang 3.1 200"),
        decision(3, at(9), "upgrad 2022 lts"),  # a version number, as before: the same setting
        decision(4, at(16), "rang 6.25 200"),  # "The range is 6.25 to 200 from now on."
        decision(5, at(23), "lts train monday"),  # no value set: not the same decision
    ]
    assert link(items, []).superseded_by == {1: 3, 2: 4, 3: None, 4: None, 5: None}


def test_a_dates_day_and_year_are_not_an_amount():
    items = [
        decision(1, at(2), "move launch may 19"),
        decision(2, at(9), "retail price 89 launch discount 10 preorder"),  # an amount: not the launch's date
        decision(3, at(16), "move launch may 26 2026"),
    ]
    assert link(items, []).superseded_by == {1: 3, 2: None, 3: None}


def test_a_decision_said_again_as_unchanged_or_with_the_day_as_a_number_only_restates_it():
    items = [
        decision(1, at(2), "move go-liv live monday march"),  # "the 16th of March": the ordinal is no subject word
        replace(decision(2, at(9), "go-liv live stay monday 16 march"), listed=True),  # "Go-live stays on Monday 16 March."
        decision(3, at(9, 40), "curfew eleven saturday ten thirti sunday"),
        decision(4, at(16), "curfew unchang eleven saturday ten thirti sunday"),
        decision(5, at(23), "go-liv live move monday 30 march"),
    ]
    assert link(items, []).superseded_by == {1: 5, 2: 5, 3: None, 4: None, 5: None}


def test_decisions_on_different_subjects_stay_current():
    items = [decision(1, at(2), "launch may 5"), decision(2, at(9), "retail price 89")]
    assert link(items, []).superseded_by == {1: None, 2: None}


def test_a_models_proposed_link_wins_over_word_overlap():
    items = [
        decision(1, at(2), "vendor acm cloud host"),
        decision(2, at(3), "budget cap 40k"),
        decision(3, at(9), "vendor contract sign", supersedes="budget cap 40k"),
    ]
    assert link(items, []).superseded_by == {1: None, 2: 3, 3: None}


def test_done_reported_by_the_owner_closes_the_task_it_answers():
    items = [task(1, at(2), "send bom factori", "Dana Kim"), task(2, at(2, 40), "book fcc lab slot", "Tom Lee")]
    changes = [
        # "Where are we with the BOM for the factory?" / Dana: "I sent it Friday."
        change(10, at(9), "done", "sent friday", context_words=words("bom factori"), speakers=("Dana Kim",)),
    ]
    timeline = link(items, changes)
    assert (timeline.tasks[1].status, timeline.tasks[2].status) == ("done", "open")
    assert timeline.change_targets == {10: ("task", 1)}


def test_a_report_in_notes_that_names_the_owner_counts_as_the_owner_s_own():
    items = [
        task(1, at(2), "send draft condit propos see exact word gate noise", "Gareth Lloyd"),
        task(2, at(2, 40), "draft site plan revis", "Owen Hart"),
    ]
    # notes, no speaker: "Gareth sent the draft licence conditions on the 7th."
    named = change(10, at(9), "done", "gareth draft licenc condit")
    assert link(items, [named], names=["gareth", "lloyd", "owen", "hart"]).tasks[1].status == "done"
    # the same words naming no one fall short of the task's subject
    anonymous = change(10, at(9), "done", "draft licenc condit")
    assert link(items, [anonymous], names=["gareth", "lloyd", "owen", "hart"]).tasks[1].status == "open"


def test_a_new_date_promised_by_the_owner_moves_a_task_due_around_that_meeting():
    items = [task(1, at(2), "send design pack northfield", "Sanjay Mehta", due="2026-03-06")]

    def promised(day: int, new: str, speaker: str = "Sanjay Mehta") -> TimedChange:
        # "I'll have the design pack to Northfield by the ...", said in a later meeting
        return change(10, at(day), "rescheduled", "design pack northfield", speakers=(speaker,), new_value=new, promised=True)

    assert link(items, [promised(9, "2026-03-13")]).tasks[1].due_date == date(2026, 3, 13)
    assert link(items, [promised(9, "2026-03-13", "Tom Lee")]).tasks[1].due_date == date(2026, 3, 6)  # not the owner
    assert link(items, [promised(9, "2026-03-04")]).tasks[1].due_date == date(2026, 3, 6)  # earlier: a new task's date
    far = Moment(date(2026, 4, 20), 50.0, "m50", 0)  # six weeks after it was due: another piece of work
    late = replace(promised(9, "2026-04-30"), at=far)
    assert link(items, [late]).tasks[1].due_date == date(2026, 3, 6)


def test_a_change_that_names_no_open_item_changes_nothing():
    items = [task(1, at(2), "send bom factori", "Dana Kim")]
    changes = [change(10, at(9), "done", "weather nice today")]
    timeline = link(items, changes)
    assert timeline.tasks[1].status == "open" and timeline.change_targets == {10: None}


def test_a_change_never_reaches_back_to_a_later_item_or_a_closed_one():
    items = [task(1, at(9), "send bom factori", "Dana Kim")]
    early = [change(10, at(2), "done", "bom factori sent")]
    assert link(items, early).tasks[1].status == "open"


def test_handover_then_done_then_reschedule_apply_in_meeting_order():
    items = [task(1, at(2), "write migrat runbook", "Sofia Ruiz", "2026-03-20")]
    changes = [
        change(12, at(16), "done", "migrat runbook finish review"),
        change(10, at(9), "reassigned", "raj take runbook", new_value="Raj Patel", context_words=words("migrat")),
        change(11, at(9, 5), "rescheduled", "runbook migrat push", new_value="2026-03-27"),
    ]
    state = link(items, changes).tasks[1]
    assert (state.assignee, state.due_date, state.status) == ("Raj Patel", date(2026, 3, 27), "done")


def test_a_closed_risk_closes_the_same_risk_said_again_but_not_another_on_a_shared_word():
    risks = [
        TimedItem("risk", 1, at(2), words("big worri memori frame rate"), "My big worry is memory, not frame rate.", {}),
        TimedItem("risk", 2, at(9), words("memori remain biggest"), "Memory remains the biggest risk.", {}),
        TimedItem("risk", 3, at(9, 5), words("frame rate drop dock"), "The frame rate may drop when docked.", {}),
    ]
    timeline = link(risks, [change(20, at(16), "closed", "call memori problem close")])
    assert timeline.risk_status == {1: "closed", 2: "closed", 3: "open"}


def test_a_closed_risk_is_closed_and_work_reported_done_also_ends_the_risk_it_names():
    risk = TimedItem("risk", 5, at(2), words("certif lab slot slip"), "certification could slip", {})
    other = TimedItem("risk", 6, at(2, 9), words("supplier cell late"), "cells late", {})
    budget = TimedItem("risk", 8, at(2, 12), words("budget overrun contractor"), "budget overrun", {})
    delivery = task(7, at(2, 20), "get supplier cell deliv", "Dana Kim")
    changes = [
        change(20, at(9), "closed", "certif risk gone"),
        change(21, at(9, 5), "done", "supplier cell deliv friday"),  # "The supplier's cells were delivered on Friday."
    ]
    timeline = link([risk, other, budget, delivery], changes)
    assert timeline.tasks[7].status == "done"
    assert timeline.risk_status == {5: "closed", 6: "closed", 8: "open"}  # the cells came: no longer late
    assert timeline.change_targets == {20: ("risk", 5), 21: ("task", 7)}  # the report cites the task it closed


def test_something_reported_done_that_no_task_asked_for_closes_the_risk_it_names():
    fibre = TimedItem("risk", 1, at(2), words("fibr instal date unknown catalogu public pcs"), "Fibre date unknown", {})
    parking = TimedItem("risk", 2, at(2, 9), words("park space short open day"), "Parking may be short", {})
    changes = [
        change(19, at(2, 40), "done", "park space mark open day"),  # the meeting that raised it: no report on it
        change(20, at(16), "done", "fibr went live 1st"),
        change(21, at(16, 5), "done", "sign paint door"),
    ]
    timeline = link([fibre, parking], changes)
    assert timeline.risk_status == {1: "closed", 2: "open"}
    assert timeline.change_targets == {19: None, 20: ("risk", 1), 21: None}


def test_a_models_change_changes_only_the_item_it_names():
    memory = TimedItem("risk", 1, at(2), words("big worri memori frame rate"), "My big worry is memory.", {})
    again = TimedItem("risk", 2, at(9), words("memori remain biggest"), "Memory remains the biggest risk.", {})
    cells = TimedItem("risk", 3, at(2, 9), words("supplier cell late"), "The cells may be late.", {})
    delivery = task(4, at(2, 20), "get supplier cell deliv", "Dana Kim")
    changes = [  # a model named these; it closes what it says is closed, and no more
        change(20, at(16), "closed", "call memori problem close", proposed_target="My big worry is memory."),
        change(21, at(16, 5), "done", "supplier cell deliv friday", proposed_target="get supplier cell deliv"),
    ]
    timeline = link([memory, again, cells, delivery], changes)
    assert timeline.risk_status == {1: "closed", 2: "open", 3: "open"}
    assert timeline.tasks[4].status == "done"
    assert timeline.change_targets == {20: ("risk", 1), 21: ("task", 4)}


def test_a_task_made_of_a_handovers_words_is_the_earlier_tasks_follow_up():
    original = task(1, at(2), "submit streetlight grant applic", "Sam Greene")
    # "James, could you take over the streetlight grant application from me?": a task and a handover at once.
    follow_up = TimedItem("task", 2, at(9, 100), words("jame take streetlight grant applic"), "James, could you...",
                          {"assignee": "James Ortiz", "status": "open"}, end=170)  # fmt: skip
    changes = [
        change(10, at(9, 100), "reassigned", "jame take streetlight grant applic", new_value="James Ortiz"),
        change(11, at(16), "done", "streetlight grant applic submit"),
    ]
    timeline = link([original, follow_up], changes, names=["jame", "sam", "green", "ortiz"])
    assert timeline.change_targets == {10: ("task", 1), 11: ("task", 1)}
    assert (timeline.tasks[1].status, timeline.tasks[1].assignee) == ("done", "James Ortiz")
    assert timeline.tasks[2] == timeline.tasks[1]


def test_a_later_notes_action_item_listing_an_earlier_task_says_where_it_stands_now():
    booking = task(1, at(2), "book salsa audit date march", "Niamh Doherty", "2026-03-13")
    quote = task(2, at(2, 50), "quot grp switchroom modulec", "Gareth Pryce", "2026-03-31")
    notes = "m9"

    def listed(id_: int, position: int, text: str, assignee: str, due: str) -> TimedItem:
        return replace(task(id_, at(9, position, notes), text, assignee, due), listed=True, end=position + 40)

    items = [
        booking,
        quote,
        # "- Gareth Pryce: book the SALSA audit (taken over from Niamh), due 27 February"
        listed(3, 100, "book salsa audit taken niamh", "Gareth Pryce", "2026-03-27"),
        # "- Gareth Pryce: get three quotes for the brick switchroom": another task on a shared word or two
        listed(4, 200, "three quot brick switchroom", "Gareth Pryce", "2026-04-10"),
        # the same notes' discussion said it first: a list restating its own meeting changes nothing earlier
        replace(task(5, at(9, 10, notes), "rerun soak test", "Omar Haddad"), end=40),
        listed(6, 300, "rerun soak test revis c", "Omar Haddad", "2026-03-20"),
    ]
    done = change(10, at(16), "done", "salsa audit book")
    timeline = link(items, [done], names=["niamh", "doherti", "gareth", "pryce", "omar", "haddad"])

    assert (timeline.tasks[1].assignee, timeline.tasks[1].due_date) == ("Gareth Pryce", date(2026, 3, 27))
    assert timeline.tasks[3] == timeline.tasks[1]  # the listed line shows the task it lists
    assert timeline.change_targets == {10: ("task", 1)}  # and the later report closes that task
    assert timeline.tasks[1].status == "done"
    assert (timeline.tasks[2].due_date, timeline.tasks[4].due_date) == (date(2026, 3, 31), date(2026, 4, 10))
    assert (timeline.tasks[5].due_date, timeline.tasks[6].due_date) == (None, date(2026, 3, 20))


def test_names_dates_and_contractions_are_not_what_a_task_is_about():
    items = [
        task(1, at(2), "dana send bom februari 13", "Dana Kim"),
        task(2, at(2, 30), "dana ll merg sheet", "Dana Kim"),  # "Dana: I'll merge it into the sheet"
    ]
    changes = [change(10, at(9), "done", "dana ll februari 13 went")]  # shares only a name, "ll" and a date
    assert link(items, changes, names=["dana", "kim"]).change_targets == {10: None}
    changes = [change(11, at(9), "done", "bom went last thursday")]
    assert link(items, changes, names=["dana", "kim"]).change_targets == {11: ("task", 1)}


def test_a_models_answer_that_a_decision_replaces_nothing_is_not_overruled_by_shared_words():
    items = [
        decision(1, at(2), "furnitur budget 40k euro chair"),
        decision(2, at(9), "furnitur budget 40k euro kitchen also", supersedes=None),  # shown decision 1, named none
        decision(3, at(9, 40), "furnitur budget 40k euro kitchen also"),  # no model asked: the words decide
    ]
    assert link(items, []).superseded_by == {1: 3, 2: None, 3: None}


def test_a_models_link_holds_where_the_words_alone_would_read_a_restatement():
    items = [
        decision(1, at(2), "north slope roof strip new batten membran slate south"),
        # "Re-roof both slopes, not just the north slope.": no change cue and no new word, but the model says it
        decision(2, at(9), "roof slope north", supersedes="north slope roof strip new batten membran slate south"),
        decision(3, at(16), "north slope roof"),  # no model asked: the same words only say it again
    ]
    assert link(items, []).superseded_by == {1: 2, 2: None, 3: None}


def test_a_models_decisions_of_one_meeting_all_stand():
    # "The three shows are named Night Shift, Small Plates and Back Pages.": "back" reads as a change cue
    first = decision(1, at(2, 0, "m"), "three show launch togeth tuesday 3 novemb")
    named = decision(2, at(2, 50, "m"), "three show name night shift small plate back page")
    assert link([first, named], []).superseded_by == {1: 2, 2: None}  # words alone: a stated change
    by_model = [replace(first, by_model=True), replace(named, by_model=True)]
    assert link(by_model, []).superseded_by == {1: None, 2: None}  # the meeting's outcome, as a model took it


def test_a_task_that_says_nothing_of_what_it_is_is_about_what_was_said_just_before_it():
    # "Halvorsen's questionnaire?" / Tom: "I'll take it."
    said_before = words("halvorsen questionnair")
    items = [
        replace(task(1, at(2), "ll take", "Tom Lee"), context_words=said_before),
        replace(task(2, at(2, 40), "book pen test", "Tom Lee"), context_words=words("secur questionnair")),
    ]
    # Tom: "The questionnaire went to Erik on the 11th."
    changes = [change(10, at(9), "done", "questionnair went erik 11th", speakers=("Tom Lee",))]
    timeline = link(items, changes)
    assert timeline.change_targets == {10: ("task", 1)}  # a task with words of its own is about those
    assert (timeline.tasks[1].status, timeline.tasks[2].status) == ("done", "open")
    without_context = [task(1, at(2), "ll take", "Tom Lee")]
    assert link(without_context, changes).change_targets == {10: None}


def test_a_task_that_refers_back_with_one_word_of_its_own_is_also_about_what_was_said_before_it():
    # "I need venues for the drop-in sessions." / Gareth: "I'll get them booked before the 20th."
    booked = task(1, at(2), "ll get book 20th", "Gareth Lloyd")
    items = [replace(booked, description="I'll get them booked before the 20th.", context_words=words("venu drop-in"))]
    # notes: "Gareth has the drop-in venues sorted: eleven libraries and two village halls."
    changes = [change(10, at(9), "done", "drop-in venu sort eleven librari villag hall")]
    assert link(items, changes).change_targets == {10: ("task", 1)}
    # the same words without a word that refers back: the task is about its own word
    items = [replace(booked, description="I'll get the booking done before the 20th.", context_words=words("venu drop-in"))]
    assert link(items, changes).change_targets == {10: None}


def test_a_change_that_names_only_the_new_choice_is_linked_by_what_was_said_around_either_decision():
    # "Pedalink is cheaper, but Urbanvolt can deliver by May." / "We go with Urbanvolt as the e-bike supplier."
    chosen = replace(decision(1, at(2), "go urbanvolt e-bik supplier"), context_words=words("pedalink cheaper deliv"))
    other = decision(2, at(2, 50), "battery swap depot")
    # "Urbanvolt now say sixteen weeks, we can't make June with them." / "We switch to Pedalink."
    switch = replace(decision(3, at(9), "switch pedalink"), context_words=words("urbanvolt sixteen week make"))
    assert link([chosen, other, switch], []).superseded_by == {1: 3, 2: None, 3: None}
    # Said around it, but no change stated, or within the meeting that chose: no link.
    plain = replace(decision(3, at(9), "pedalink spare"), context_words=words("urbanvolt sixteen week make"))
    assert link([chosen, other, plain], []).superseded_by[1] is None
    same_meeting = replace(switch, at=at(2, 90))
    assert link([chosen, other, same_meeting], []).superseded_by[1] is None


def test_going_back_to_an_earlier_choice_states_a_change():
    items = [
        decision(1, at(2), "e-bik supplier urbanvolt"),
        decision(2, at(9), "switch e-bik supplier pedalink"),
        # later in the same meeting, which only a stated change replaces ("go back" is joined, as stored)
        decision(3, at(9, 40), "goback e-bik supplier urbanvolt"),  # "We go back to Urbanvolt as e-bike supplier."
    ]
    assert link(items, []).superseded_by == {1: 2, 2: 3, 3: None}


def test_another_day_of_the_same_kind_is_a_change_and_an_added_month_only_restates():
    items = [
        decision(1, at(2), "main kitchen close monday 9 novemb reopen friday 18 decemb"),
        decision(2, at(9), "main kitchen reopen wednesday 23 decemb 18th"),  # "on Wednesday 23 December, not the 18th"
        decision(3, at(9, 40), "move launch monday 14th"),  # "We move launch to Monday the 14th."
        decision(4, at(16), "launch stay monday 14 decemb"),  # "Launch stays Monday 14 December."
        decision(5, at(23), "launch friday 18 decemb"),
    ]
    assert link(items, []).superseded_by == {1: 2, 2: None, 3: 5, 4: 5, 5: None}


def test_a_change_whose_context_says_the_old_value_replaces_the_decision_that_set_it():
    items = [
        decision(1, at(2), "new network start 5 april 2027 contract roll"),  # "starts on 5 April 2027, ..."
        decision(2, at(2, 40), "consult run eight week"),
        # "With eight weeks of consultation, April is not happening." / "So we move to Sunday 30 May 2027."
        replace(decision(3, at(9), "move sunday 30 may 2027"), context_words=words("eight week consult april happen")),
    ]
    assert link(items, []).superseded_by == {1: 3, 2: None, 3: None}
    said_before = replace(items[2], context_words=words("eight week consult happen"))  # the old value not said
    assert link([*items[:2], said_before], []).superseded_by[1] is None


def test_a_report_naming_one_of_a_task_s_three_words_is_on_that_task():
    graphs = task(1, at(2), "peak graph halloween", "Owen Pryce")  # "I'll pull the peak graphs from Halloween."
    changes = [change(10, at(9), "done", "graph went round")]  # "The graphs went round on the 14th."
    assert link([graphs], changes).change_targets == {10: ("task", 1)}


def test_a_change_to_another_named_choice_where_either_was_said_around_the_other_replaces_it():
    # "Hydrolink charge the couplings separately. I'd lean Aquametric." / "We go with Aquametric as the meter supplier,
    # and we hold them to a delivery schedule."
    text = "We go with Aquametric as the meter supplier, and we hold them to a delivery schedule."
    chosen = replace(
        decision(1, at(2), "aquametr meter supplier hold deliveri schedul"),
        description=text,
        context_words=words("hydrolink charg coupl separ lean aquametr"),
    )
    # "Hydrolink can do twelve thousand by the end of July." / "We move the order to Hydrolink."
    moved = replace(
        decision(2, at(9), "move order hydrolink"),
        description="We move the order to Hydrolink.",
        context_words=words("crew yard hydrolink twelv thousand juli"),
    )
    assert link([chosen, moved], []).superseded_by == {1: 2, 2: None}
    # The same words, no name said capitalised: too little shared.
    unnamed = replace(moved, description="we move the order to hydrolink.")
    assert link([chosen, unnamed], []).superseded_by[1] is None
    # Neither name said around the other: no swap.
    apart = replace(chosen, context_words=words("charg coupl separ lean"))
    assert link([apart, replace(moved, context_words=words("crew yard meter twelv juli"))], []).superseded_by[1] is None


def test_when_a_decision_starts_finishes_or_closes_is_its_subject():
    # "We go for a start on 1 September 2027, running five years." / "We start on 1 October 2027."
    items = [decision(1, at(2), "start 1 septemb 2027 run five year"), decision(2, at(9), "start 1 octob 2027")]
    assert link(items, []).superseded_by == {1: 2, 2: None}
    other = [items[0], decision(2, at(9), "launch 1 octob 2027")]
    assert link(other, []).superseded_by[1] is None


def test_a_report_naming_no_task_closes_the_one_task_its_speaker_owed_by_then():
    # "Gareth, could you talk to Aeris and BlueHorizon about the two flights, by the 9th?" / Gareth, on the 16th: "I
    # spoke to both of them on the 16th."
    flights = task(1, at(2), "talk aeri bluehorizon flight", "Gareth Pryce", due="2026-03-09")
    later = task(2, at(2, 40), "issu closur notam", "Gareth Pryce", due="2026-03-30")  # due after the report
    theirs = task(3, at(2, 80), "book crane", "Owen Lacey", due="2026-03-06")
    spoke = change(10, at(16), "done", "spoke", speakers=("Gareth Pryce",))
    timeline = link([flights, later, theirs], [spoke])
    assert [timeline.tasks[i].status for i in (1, 2, 3)] == ["done", "open", "open"]
    assert timeline.change_targets == {10: ("task", 1)}
    # Two tasks owed by then: which one is not said, so neither.
    both_due = replace(later, stated={**later.stated, "due_date": "2026-03-12"})
    assert link([flights, both_due, theirs], [spoke]).change_targets == {10: None}
    # Someone else's report, or a task a cancellation named first, is not the speaker's.
    assert link([flights, later, theirs], [replace(spoke, speakers=("Owen Lacey",))]).tasks[1].status == "open"
    dropped = change(11, at(16, 40), "cancelled", "aeri flight", speakers=("Helen Marsh",))
    timeline = link([flights, later, theirs], [spoke, dropped])
    assert (timeline.tasks[1].status, timeline.change_targets[10]) == ("cancelled", None)
    # A report on a risk ("the landlord finished the cabling, so I'd call the cabling risk closed") is not on a task.
    cabling = TimedItem("risk", 4, at(2, 90), words("landlord cabl"), "The landlord may not finish the cabling.", {})
    finished = change(12, at(16, 60), "done", "landlord finish", speakers=("Gareth Pryce",))
    closed = replace(finished, id=13, change="closed")
    timeline = link([flights, later, cabling], [finished, closed])
    assert (timeline.tasks[1].status, timeline.risk_status[4], timeline.change_targets[12]) == ("open", "closed", None)
