"""rag.backfill.changes: which sentences report a task done, cancelled, handed over or moved, or a risk closed."""

from __future__ import annotations

from datetime import date

import pytest

from rag.backfill.changes import detect_changes
from rag.backfill.units import Unit
from rag.people import People

MONDAY = date(2026, 3, 2)
PEOPLE = People.of(["Priya Nair (PM)", "Omar Haddad", "Lena Vogel"])


def changes_of(text: str, speaker: str | None = "Lena Vogel") -> list[tuple[str, str | None]]:
    units = [Unit(0, len(text), text, 0 if speaker else None, speaker)]
    return [(c.change, c.new_value) for c in detect_changes(units, None, MONDAY, PEOPLE)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I sent the vendor shortlist on Thursday.", [("done", None)]),
        ("The floor plan went out to the landlord last week.", [("done", None)]),
        ("The venue deposit is paid and the contract is signed.", [("done", None)]),
        ("Good news, the test rig is up since Friday.", [("done", None)]),
        ("Done.", [("done", None)]),
        ("The survey came back yesterday.", [("done", None)]),
        ("We're calling off the offsite.", [("cancelled", None)]),
        ("We no longer need the second quote.", [("cancelled", None)]),
        ("Omar, could you take over the press kit from me?", [("reassigned", "Omar Haddad")]),
        ("Priya will take the budget sheet over.", [("reassigned", "Priya Nair")]),
        ("I'm handing the hotel booking over to Lena.", [("reassigned", "Lena Vogel")]),
        ("Omar, can you take the recruitment campaign off Priya?", [("reassigned", "Omar Haddad")]),
        # a handover that gives the new owner a date moves the task too, asked or said
        (
            "Omar, could you take over the press kit from me, by Friday?",
            [("reassigned", "Omar Haddad"), ("rescheduled", "2026-03-06")],
        ),
        ("I'll take it over, end of next week.", [("reassigned", "Lena Vogel"), ("rescheduled", "2026-03-13")]),
        # the speaker takes it: what is taken over is not reported done ("I've got all the numbers")
        ("Give it to me, I've got all the numbers.", [("reassigned", "Lena Vogel")]),
        ("Then hand that over to me.", [("reassigned", "Lena Vogel")]),
        ("They give it to me every year.", []),
        ("We push the dry run to March 16.", [("rescheduled", "2026-03-16")]),
        ("The audit slipped to the end of next week.", [("rescheduled", "2026-03-13")]),
        # more time asked for (a question that moves the date), a new date set against the old one
        ("Can I have until the 13th?", [("rescheduled", "2026-03-13")]),
        ("Give me until Friday the 20th.", [("rescheduled", "2026-03-20")]),
        ("Realistically I'll have the floor plan by the 18th, not the 11th.", [("rescheduled", "2026-03-18")]),
        ("I'd call the permit risk closed.", [("closed", None)]),
        ("The staffing concern is resolved now that the two hires started.", [("closed", None)]),
        ("Flooding is no longer a risk since they moved the server room.", [("closed", None)]),
        ("I think we can close that one.", [("closed", None)]),
        # a past tense with when it happened, the present perfect, a ticked box
        ("I profiled the harbour level on the 8th.", [("done", None)]),
        ("Kevin reached the chef at the restaurant on July 30.", [("done", None)]),
        ("The night mapping fix went in on the 19th.", [("done", None)]),
        ("Aisha has built the staffing templates in the sandbox.", [("done", None)]),
        ("[x] Amara – museum contract and deposit", [("done", None)]),
        ("I sent the one-pager around on Monday, so that's off my list.", [("done", None)]),
        ("Then the glossary check is off my list.", [("cancelled", None)]),
        ("I'm closing the payroll risk as far as I'm concerned.", [("closed", None)]),
        ("I think we can call the memory problem closed.", [("closed", None)]),
        ("So I'm calling the boiler risk closed.", [("closed", None)]),
        ("The vendor lock-in problem is simply gone.", [("closed", None)]),
        ("That's the parking worry gone too, then.", [("closed", None)]),
        ("The mould isn't a problem after all.", [("closed", None)]),
        ("Their backorder is somebody else's problem now.", [("closed", None)]),
        ("That one's done, we can stop worrying about it.", [("closed", None), ("done", None)]),  # a risk or a task
        # a worry that goes away, is got rid of, comes off the list, is carried no more
        ("The resale worry we had goes away, because Kestrel carry the battery risk.", [("closed", None)]),
        ("It saved nearly three thousand, so the quartet overspend has gone away.", [("closed", None)]),
        ("That gets rid of my propping problem, so I'm happy.", [("closed", None)]),
        ("That one comes off the worry list.", [("closed", None)]),
        ("Ten weeks works, and we don't carry the Pedalink finances worry any more.", [("closed", None)]),
        ("With those examples I'm not worried about that one any more.", [("closed", None)]),
        ("That takes the heritage problem off the table.", [("closed", None)]),
        ("We can take oxygen off the risk list.", [("closed", None)]),
        ("So the payment problem's solved.", [("closed", None)]),
        ("So the duplication worry is dealt with.", [("closed", None)]),
        ("And that takes care of the Valebus worry.", [("closed", None)]),
        ("So the submission scare is over too.", [("closed", None)]),
        ("Honestly, the wet-ground worry has gone.", [("closed", None)]),
        ("So the festival weekend isn't our problem any more.", [("closed", None)]),
        ("And the roadworks at Ashworth stop being our problem.", [("closed", None)]),
        ("I'm calling that closed. We have a unit, a date and a contract.", [("closed", None)]),
        ("On the courier, Ruth drove down in the end, so the strike didn't touch us.", [("closed", None)]),
        ("I'm far less worried about the iron weeping.", [("closed", None)]),
        ("The committee deadline worry can go, then.", [("closed", None)]),
        ("And the worry about the panel failing goes with it.", [("closed", None)]),
        ("So no challenge risk.", [("closed", None)]),
        ("The licence problem isn't solved yet.", []),
        ("The staffing gap is covered for now, not for the summer.", []),
        ("That's on top of the first quarter dip, which hasn't gone away either.", []),
        ("That worry never went away.", []),
        ("I'll take the trailer over.", [("reassigned", "Lena Vogel")]),
        # a report with a question tag, circulated, arrived, in place; work stopped or dropped
        ("Also, I sent the seating chart on the 9th, did everyone get it?", [("done", None)]),
        ("Omar's revised budget went round on the 6th.", [("done", None)]),
        ("The council's answer came on the 24th, and it's a no.", [("done", None)]),
        ("The night security has been in since the 1st.", [("done", None)]),
        ("Single sign-on's been live for payroll since the 14th.", [("done", None)]),
        ("Two kiosks in the canteen, live since the 11th of December.", [("done", None)]),
        ("And I wrote to Gareth the day after our kick-off.", [("done", None)]),
        ("Rahul heard back from the insurer on 22 February.", [("done", None)]),
        ("I'll stop work on the mobile prototype.", [("cancelled", None)]),
        ("Honestly, let's drop it.", [("cancelled", None)]),
        ("I've dropped it.", [("cancelled", None)]),
        ("So I've stopped the application, there's no point.", [("cancelled", None)]),
        ("I never placed the second order.", [("cancelled", None)]),
        ("I've thanked them, but we'll leave it.", [("cancelled", None)]),
        # when, said as a spelled ordinal, a part of a day or "first thing"; irregular past tenses
        ("Order went in on the fourteenth.", [("done", None)]),
        ("The new letter went to the printers on the twenty-second.", [("done", None)]),
        ("The day rates reached Helen on the evening of 25 June.", [("done", None)]),
        ("Priya had the written price the same evening.", [("done", None)]),
        ("Owen laid the trial panel on the old taxiway on 11 March.", [("done", None)]),
        ("Both monitors went up in Larkfield on the 1st.", [("done", None)]),
        ("The fix was in the QA build first thing on the 4th.", [("done", None)]),
        ("The graphs have been in the shared drive since the 9th.", [("done", None)]),
        ("So the item list can be dropped.", [("cancelled", None)]),
        ("The second panel, don't bother with it.", [("cancelled", None)]),
        ("The old contract turned up in the archive at Hallam House.", [("done", None)]),  # found
        ("I found the commissioning file, by the way.", [("done", None)]),
        ("I got Halden to give a firm date on the ovens, like you asked.", [("done", None)]),
        ("Ruth raised the purchase order with Halden.", [("done", None)]),
        ("My model's up on the shared drive.", [("done", None)]),
        ("The write-up's in the shared folder.", [("done", None)]),
        ("Proration is switched to daily since the 26th.", [("done", None)]),
        ("The cost code's live as well.", [("done", None)]),
        ("Yes, drop it, no point now it's all sterling.", [("cancelled", None)]),
        ("No, that's off.", [("cancelled", None)]),
        ("I'll tell them we won't need it.", [("cancelled", None)]),
        ("All eight, they're on the shared drive.", [("done", None)]),
        ("Seven minutes out. It went in at the first preview.", [("done", None)]),
        ("The Awards for All application went off on the twenty-ninth.", [("done", None)]),
        ("Gareth, you can forget the written quote from Col.", [("cancelled", None)]),
        ("No point printing the flat-fare artwork now.", [("cancelled", None)]),
        ("Gwen will tell Ironbridge to stop costing the second set.", [("cancelled", None)]),
        ("I found an ecologist, Ruth Adeyemi at Wold Ecology.", [("done", None)]),
        ("The dining cards are reprinted with the seven till ten hours, desk briefed on the 17th.", [("done", None)]),
    ],
)
def test_a_change_statement_and_its_new_value(text, expected):
    assert changes_of(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "I'll send the vendor shortlist.",  # a plan
        "We need to book the venue.",
        "Is the floor plan done?",  # a question
        "The contract is not signed yet.",
        "It isn't finished.",
        "If the quote comes back late, we slip.",
        "Could you send it to Omar?",
        "Can I have the room until six?",  # a room, not more time for work
        "Did you send the seating chart, or is it still with Omar?",
        "We talked about the press kit.",  # past, but no completion
        "That's a risk too.",
        "Aisha Patel: load the approved annual leave into the roster, due March 2.",  # an adjective, no report
        "Keep a signed copy in the file.",
        "We decided to move into the new office on March 16 instead.",  # a decision, not work done
        "We talked it through on Thursday.",
        "I heard they were short of drivers on Monday.",  # news, not work done
        "It's been a long week.",
        "Their officer had a call with Fiona on 1 October.",  # talk, not work done
        "We had no answer on the 3rd.",
        "Ashworth can come later, once the road and the yard are done.",  # not yet
        "The group agreed to run a joint campaign, with a bonus paid by the county.",  # a decision
        "The northern lot is awarded; the southern lot goes out to tender.",  # what will happen
        "I found that hard.",
        "He's out this week.",
        "Is it in the shared drive?",
        # nobody free, no work done; not done yet
        "The problem is they've told me their Japanese and Korean teams are booked solid through November.",
        "I'm sorry, the supplier's whole fleet is booked for July, there's no quote worth having.",
        "Our translator is booked until September.",
        "So before I'd even sent the item list, their legal came back on the 9th with new terms.",
        "Until the friction test is done, the slippery surface worry stays on the list.",  # not yet
        "Two of the three are in.",  # not all of it
        "Six thousand two hundred downloads on Small Plates episode one already.",  # a number, not a past tense
    ],
)
def test_plans_questions_and_negations_change_nothing(text):
    assert changes_of(text) == []


def test_a_move_reported_after_its_new_date_keeps_that_date_s_year():
    january_12 = date(2027, 1, 12)
    said = "Because of the shutdown, the comparison moved to the 6th of January rather than before Christmas."
    [move] = detect_changes([Unit(0, len(said), said, 4, "Aisha Rahman")], None, january_12, PEOPLE)
    assert (move.change, move.new_value) == ("rescheduled", "2027-01-06")
    ahead = "We move the review to the 6th of January."  # said in December: the coming January
    [move] = detect_changes([Unit(0, len(ahead), ahead, 4, "Aisha Rahman")], None, date(2026, 12, 12), PEOPLE)
    assert move.new_value == "2027-01-06"


def test_a_new_date_promised_for_one_s_own_work_is_a_promised_reschedule():
    units = [Unit(0, 40, "I'll have the floor plan to you by the 13th.", 0, "Lena Vogel")]
    [promise] = detect_changes(units, None, MONDAY, PEOPLE)
    assert (promise.change, promise.new_value, promise.promised) == ("rescheduled", "2026-03-13", True)
    [moved] = detect_changes([Unit(0, 40, "We push the dry run to March 16.", 0, "Lena Vogel")], None, MONDAY, PEOPLE)
    assert (moved.change, moved.promised) == ("rescheduled", False)


def test_a_change_keeps_its_place_speaker_and_what_was_said_just_before():
    texts = ["Where are we with the vendor shortlist?", "I sent it on Thursday."]
    units, start = [], 0
    for turn, (text, speaker) in enumerate(zip(texts, ["Priya Nair (PM)", "Omar"])):
        units.append(Unit(start, start + len(text), text, turn, speaker))
        start += len(text) + 1
    [change] = detect_changes(units, 7, MONDAY, PEOPLE)
    assert (change.change, change.evidence, change.start_turn, change.segment_id) == ("done", texts[1], 1, 7)
    assert (change.start_char, change.end_char, change.method) == (units[1].start_char, units[1].end_char, "rules")
    assert change.speakers == ("Omar Haddad",) and change.context == texts[0]
