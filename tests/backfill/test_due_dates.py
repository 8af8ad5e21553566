"""Due dates: every common phrasing of a deadline, resolved against the meeting's date, and none where none was said."""

from __future__ import annotations

from datetime import date

import pytest

from rag.backfill.due_dates import due_date

MONDAY = date(2026, 11, 9)
TUESDAY = date(2026, 11, 10)
FRIDAY = date(2026, 11, 13)
SATURDAY = date(2026, 11, 14)
MID_FEBRUARY = date(2027, 2, 17)  # a Wednesday

PHRASINGS = [
    # calendar dates, written out
    ("I'll send the deck by March 2.", TUESDAY, date(2027, 3, 2)),
    ("The supplier needs the forecast by February 13.", TUESDAY, date(2027, 2, 13)),
    ("Dana, can you get the quote to me by February 13?", MID_FEBRUARY, date(2028, 2, 13)),  # passed: next year's
    ("Review the draft by March 16th please.", TUESDAY, date(2027, 3, 16)),
    ("Ship it 16 March.", TUESDAY, date(2027, 3, 16)),
    ("I will finish it by the 16th of March.", TUESDAY, date(2027, 3, 16)),
    ("Launch materials are due November 30.", TUESDAY, date(2026, 11, 30)),
    ("I'll file it on Sept 3, 2027 at the latest.", TUESDAY, date(2027, 9, 3)),
    ("We will sign by May 19.", TUESDAY, date(2027, 5, 19)),
    ("Due 2027-01-15 at the latest.", TUESDAY, date(2027, 1, 15)),
    # numeric dates: the unambiguous order, no guess when both parts could be the month
    ("Send the numbers by 3/16.", TUESDAY, date(2027, 3, 16)),
    ("Send the numbers by 16/3.", TUESDAY, date(2027, 3, 16)),
    ("Send the numbers by 12/18/2026.", TUESDAY, date(2026, 12, 18)),
    ("Send the numbers by 3/4.", TUESDAY, None),
    # day of the month
    ("I'll have the figures to you before the 20th.", TUESDAY, date(2026, 11, 20)),
    ("Send the artwork by the twentieth.", TUESDAY, date(2026, 11, 20)),
    ("Send the artwork by the 3rd.", TUESDAY, date(2026, 12, 3)),  # the 3rd has passed: next month's
    ("Please keep the twentieth.", TUESDAY, date(2026, 11, 20)),
    # weekdays
    ("I'll have a prototype on the bench by Friday.", TUESDAY, date(2026, 11, 13)),
    ("Friday.", MONDAY, date(2026, 11, 13)),
    ("I'll do it by Friday.", FRIDAY, date(2026, 11, 20)),  # said on a Friday: the following week's
    ("I'll do it this Friday.", FRIDAY, FRIDAY),
    ("I will send it on Tuesday.", TUESDAY, date(2026, 11, 17)),
    ("Let's meet again next Tuesday and I'll bring the plan.", MONDAY, date(2026, 11, 17)),
    ("Can you confirm with the vendor by next Friday?", MONDAY, date(2026, 11, 20)),
    ("I'll get it done Friday next week.", TUESDAY, date(2026, 11, 20)),
    ("On Monday I'll start on it and I'll be done by Thursday.", TUESDAY, date(2026, 11, 12)),
    ("Can you bring us the breakdown by Friday the 18th as well?", date(2026, 9, 8), date(2026, 9, 18)),
    ("Can you bring us the breakdown by Thursday, December 3?", TUESDAY, date(2026, 12, 3)),
    ("The hall reopens on Wednesday 23 December.", TUESDAY, date(2026, 12, 23)),
    ("I'll have the chairs counted by Friday the 4th of December.", TUESDAY, date(2026, 12, 4)),
    # weeks
    ("I will wrap it up by the end of the week.", TUESDAY, date(2026, 11, 13)),
    ("Done by the end of the week.", SATURDAY, date(2026, 11, 20)),
    ("I'll have the report by the end of next week.", MONDAY, date(2026, 11, 20)),
    ("I'll have the report by end of next week.", FRIDAY, date(2026, 11, 20)),
    ("I'll look at it next week.", TUESDAY, date(2026, 11, 20)),
    ("I'll send a first cut early next week.", TUESDAY, date(2026, 11, 16)),
    ("We'll get the contract back in two weeks.", TUESDAY, date(2026, 11, 24)),
    ("I'll report back within 10 days.", TUESDAY, date(2026, 11, 20)),
    ("I'll have an answer in a couple of weeks.", TUESDAY, date(2026, 11, 24)),
    ("I'll write the migration runbook, give me two weeks.", date(2026, 1, 12), date(2026, 1, 26)),
    # days
    ("I'll send it EOD tomorrow.", TUESDAY, date(2026, 11, 11)),
    ("Done by tomorrow please.", TUESDAY, date(2026, 11, 11)),
    ("I'll book it this afternoon.", TUESDAY, TUESDAY),
    ("Can you send it by end of day?", TUESDAY, TUESDAY),
    ("I'll have it the day after tomorrow.", FRIDAY, date(2026, 11, 15)),
    # months, quarters, the year
    ("I'll close the books by the end of the month.", TUESDAY, date(2026, 11, 30)),
    ("We need to migrate by the end of next month.", TUESDAY, date(2026, 12, 31)),
    ("I'll have the audit done by the end of January.", TUESDAY, date(2027, 1, 31)),
    ("The pilot has to be finished by end of Q2.", TUESDAY, date(2027, 6, 30)),
    ("We need to ship the new firmware in Q4.", TUESDAY, date(2026, 12, 31)),
    ("I'll hire two engineers by the end of the quarter.", TUESDAY, date(2026, 12, 31)),
    ("I'll renew the licences before the end of the year.", TUESDAY, date(2026, 12, 31)),
    ("I'll send the Q3 numbers to finance.", TUESDAY, None),  # a quarter named as a topic, not a deadline
    ("I'll get the slides for the March 2 review from Dana.", TUESDAY, date(2027, 3, 2)),
    # no date said
    ("We'll get to it.", TUESDAY, None),
    # the middle of a month, a fortnight, hours, the week after next, this time next week
    ("I'll have the survey back by mid-March.", TUESDAY, date(2027, 3, 15)),
    ("The draft is due in the middle of December.", TUESDAY, date(2026, 12, 15)),
    ("Let's aim for mid next month.", TUESDAY, date(2026, 12, 15)),
    ("I'll send it in a fortnight.", TUESDAY, date(2026, 11, 24)),
    ("You'll have it within the next 48 hours.", TUESDAY, date(2026, 11, 12)),
    ("I can turn it around in 36 hours.", TUESDAY, date(2026, 11, 12)),
    ("I'll finish it by the end of the week after next.", TUESDAY, date(2026, 11, 27)),
    ("Let's review it this time next week.", TUESDAY, date(2026, 11, 17)),
    ("The mid-year review is a topic for later.", TUESDAY, None),
    ("I sent it a week ago, I'll chase them.", TUESDAY, None),
    ("I've been on it since Monday, I'll keep going.", TUESDAY, None),
    ("Like last Friday, I'll run the numbers.", TUESDAY, None),
    ("I'll order 2 units for the lab.", TUESDAY, None),
    ("We need to upgrade to version 3.1 first.", TUESDAY, None),
    ("I'll take the third option and cut it by 2/3 of the cost.", TUESDAY, None),
    ("I'll set up the desk on the 5th floor.", TUESDAY, None),
    ("I'll send the status every Monday.", TUESDAY, None),
    ("We may 2x the order.", TUESDAY, None),
    ("At the end of the day it's your call, I'll support it.", TUESDAY, None),
    ("The support line is 24/7, I'll check the rota.", TUESDAY, None),
    ("Some time soon.", TUESDAY, None),
]


@pytest.mark.parametrize(("text", "meeting", "expected"), PHRASINGS)
def test_a_phrasing_resolves_against_the_meeting_date(text, meeting, expected):
    assert due_date(text, meeting) == expected


def test_the_table_covers_the_weekdays_it_claims():
    assert [m.weekday() for m in (MONDAY, TUESDAY, FRIDAY, SATURDAY)] == [0, 1, 4, 5]
    assert len(PHRASINGS) >= 40


def test_without_a_meeting_date_only_dates_with_a_year_resolve():
    assert due_date("I will send it by Friday.", None) is None
    assert due_date("By March 2.", None) is None
    assert due_date("Due 2027-01-15.", None) == date(2027, 1, 15)
    assert due_date("Due March 2, 2027.", None) == date(2027, 3, 2)
    assert due_date("Due 16/3/2027.", None) == date(2027, 3, 16)


def test_an_impossible_date_is_no_date():
    assert due_date("By February 30.", TUESDAY) is None
    assert due_date("Due 2027-02-30.", TUESDAY) is None
    assert due_date("By the 31st.", date(2026, 11, 10)) == date(2026, 12, 31)  # November has no 31st
