"""The deadline a sentence states, resolved against the meeting's date.

A small phrase layer finds the date phrases of a sentence; python-dateutil's ``relativedelta``
does the calendar arithmetic (next weekday, end of month, months ahead). Each phrase reads the
way a careful note-taker would write it down:

- "March 2", "16 March", "the 16th of March", "March 16th": the next such day on or after the
  meeting (so "by February 13" said in November is next February); with a year, that day.
- "3/16", "16/3", "3/16/2027": month and day in whichever order is unambiguous (a part above
  12 is the day); when both parts could be the month ("3/4") the sentence gets no date rather
  than a guess, and only after a deadline word ("by 3/16"), since "2/3 of the units" is a fraction.
- "the 20th", "the twentieth" after a deadline word ("by", "before", "on", "keep"): the next such
  day of a month on or after the meeting. "Before X" is recorded as X, the boundary the speaker named.
- "Friday", "by Friday": the next Friday after the meeting; said on a Friday it is the following
  week's (on the day itself people say "today" or "end of day"). "this Friday": the meeting's week,
  today included. "next Tuesday": Tuesday of the following calendar week (weeks start Monday), so
  on a Monday it is eight days later, not tomorrow. "Friday next week" likewise.
- "end of the week", "this week": that week's Friday. "next week", "end of next week": the following
  week's Friday; "early next week" its Monday, "mid next week" its Wednesday.
- "today", "tonight", "this afternoon", "EOD", "end of day": the meeting date; "tomorrow",
  "EOD tomorrow": the next day.
- "in two weeks", "within 10 days", "in a couple of weeks", "give me two weeks", "in a fortnight": counted from
  the meeting; "within 48 hours": the day those hours end on. "this time next week": a week after the meeting.
  "the week after next": that week's Friday.
- "Friday the 18th", "Thursday, December 3", "Wednesday 23 December", "Friday the 4th of December": the date (the
  weekday only names it).
- "end of the month", "next month", "end of March": the last day of that month; "mid-March", "the middle of
  December", "mid next month": its 15th.
- "in Q3", "by end of Q2", "end of the quarter", "next quarter": the quarter's last day ("the Q3 numbers" is a topic,
  not a deadline); "end of the year": December 31.

No date for what names no deadline: "we'll get to it", "a week ago", "since Monday", "last Friday",
"every Monday", "2 units", "version 3.1", "the third option". When a sentence names several dates,
the one after a deadline word wins ("on Monday I start, done by Friday" is due Friday), then the first.
Relative phrases need the meeting date; without one only dates with a year resolve.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta

from dateutil.relativedelta import FR, MO, SA, SU, TH, TU, WE, weekday

from rag.backfill.calendar_days import monday_of_week, on_or_after, quarter_end, safe_date, shift

WEEKDAY_OF = (MO, TU, WE, TH, FR, SA, SU)

MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
MONTHS["sept"] = 9
WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
ORDINAL_WORDS = {
    word: i + 1
    for i, word in enumerate(
        "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth fourteenth "
        "fifteenth sixteenth seventeenth eighteenth nineteenth twentieth twenty-first twenty-second twenty-third "
        "twenty-fourth twenty-fifth twenty-sixth twenty-seventh twenty-eighth twenty-ninth thirtieth thirty-first".split()
    )
}
COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
          "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "couple of": 2}  # fmt: skip

_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_ORDINAL_WORDS = "|".join(sorted(ORDINAL_WORDS, key=len, reverse=True))
_ORDINAL = rf"(?P<day>\d{{1,2}}(?:st|nd|rd|th)|{_ORDINAL_WORDS})"  # "the 20th", "the twentieth"
_DAY_BEFORE_MONTH = rf"(?P<day>\d{{1,2}}(?:st|nd|rd|th)?|{_ORDINAL_WORDS})"  # "16 March", "the sixteenth of March"
_WEEKDAY = r"(?P<weekday>" + "|".join(WEEKDAYS) + r")"
_YEAR = r"(?:,?\s+(?P<year>\d{4}))?"
_COUNT = r"(?P<count>\d{1,3}|" + "|".join(sorted(COUNTS, key=len, reverse=True)) + ")"

# A deadline word right before a phrase marks it as the due date when there are several ("on Monday I start,
# done by Thursday"); "on" / "for" / "keep" only say it is a date ("on the 20th"), not that it is the deadline.
DEADLINE_CUE = re.compile(r"\b(?:by|before|until|till|due|no\s+later\s+than|deadline(?:\s+is)?|latest)\s+(?:the\s+)?$", re.I)
DATE_CUE = re.compile(r"\b(?:on|for|keep)\s+(?:the\s+)?$", re.I)
# Words before a phrase that make it a past or recurring time, not a deadline.
NOT_A_DEADLINE = re.compile(r"\b(?:since|last|from|starting|every|each|past|previous|as\s+of)\s+(?:the\s+)?$", re.I)
AGO = re.compile(r"^\s+ago\b", re.I)
# What may follow "the 20th" when it is a day ("by the 20th, please"), not a rank ("the third option").
DAY_FOLLOWER = re.compile(
    r"^(?:\s*(?:$|[.,;:!?)\-]))|^\s+(?:at|so|and|or|please|then|if|because|when|latest|to|is|will|would|should|as|but|"
    r"of\s+(?:this|next|the)\s+month|anyway|okay|ok|right)\b",
    re.I,
)


@dataclass(frozen=True)
class _Phrase:
    pattern: re.Pattern[str]
    resolve: Callable[[re.Match[str], date | None], date | None]
    weak: bool = False  # a time of day ("EOD"): used only when the sentence names no other date
    needs_cue: bool = False  # a bare number or ordinal: a date only after a deadline word


def due_date(text: str, meeting_date: date | None) -> date | None:
    """The deadline ``text`` names, resolved against ``meeting_date``; None when it names none."""
    best: tuple[tuple[bool, int, int, int], date] | None = None
    for phrase in PHRASES:
        for match in phrase.pattern.finditer(text):
            before, after = text[: match.start()], text[match.end() :]
            if NOT_A_DEADLINE.search(before) or AGO.match(after):
                continue
            cue = 2 if DEADLINE_CUE.search(before) else 1 if DATE_CUE.search(before) else 0
            if phrase.needs_cue and not cue:
                continue
            resolved = phrase.resolve(match, meeting_date)
            if resolved is None:
                continue
            rank = (not phrase.weak, cue, -match.start(), match.end() - match.start())
            if best is None or rank > best[0]:
                best = (rank, resolved)
    return best[1] if best else None


def names_a_date(text: str) -> bool:
    """Whether ``text`` names a deadline at all (resolved against any day: only its presence matters)."""
    return due_date(text, date(2001, 1, 1)) is not None


# --- resolvers ---------------------------------------------------------------------------


def _month_of(match: re.Match[str]) -> int | None:
    word = match["month"]
    if word == "may":  # the modal verb ("we may 2x it"); the month is written "May"
        return None
    return MONTHS.get(word.lower().rstrip("."))


def _day_of(word: str) -> int:
    digits = word.rstrip("stndrhSTNDRH")
    return int(digits) if digits.isdigit() else ORDINAL_WORDS[word.lower()]


def _calendar_date(match: re.Match[str], base: date | None) -> date | None:
    month = _month_of(match)
    if month is None:
        return None
    day = _day_of(match["day"])
    if match["year"]:
        return safe_date(int(match["year"]), month, day)
    return on_or_after(base, month, day) if base else None


def _numeric_date(match: re.Match[str], base: date | None) -> date | None:
    first, second = int(match["first"]), int(match["second"])
    if first > 12 >= second:
        day, month = first, second
    elif second > 12 >= first:
        month, day = first, second
    else:  # "3/4": March 4 in the US, 3 April elsewhere; no date beats a wrong one
        return None
    if year := match["year"]:
        return safe_date(int(year) + (2000 if len(year) == 2 else 0), month, day)
    return on_or_after(base, month, day) if base else None


def _day_of_month(match: re.Match[str], base: date | None) -> date | None:
    if base is None or not DAY_FOLLOWER.search(match.string[match.end() :]):
        return None
    day = _day_of(match["day"])
    if not 1 <= day <= 31:
        return None
    month_start = base.replace(day=1)
    for months_ahead in range(3):  # the 31st may skip a short month
        first = shift(month_start, months=months_ahead)
        candidate = safe_date(first.year, first.month, day)
        if candidate and candidate >= base:
            return candidate
    return None


def _iso(match: re.Match[str], _base: date | None) -> date | None:
    return safe_date(int(match["year"]), int(match["month"]), int(match["day"]))


def _weekday(match: re.Match[str], base: date | None) -> date | None:
    if base is None:
        return None
    day: weekday = WEEKDAY_OF[WEEKDAYS[match["weekday"].lower()]]
    modifier = (match["modifier"] or "").lower()
    if modifier == "next" or match["next_week"]:
        return shift(monday_of_week(base, 1), weekday=day(+1))
    if modifier.startswith("this"):
        return shift(base, weekday=day(+1))  # today included
    resolved = shift(base, days=+1, weekday=day(+1))  # strictly after the meeting
    return resolved + timedelta(weeks=1) if match["week_after"] else resolved


def _offset(days: int) -> Callable[[re.Match[str], date | None], date | None]:
    return lambda _match, base: base + timedelta(days=days) if base else None


def _week_day(weeks_ahead: int, weekday_index: int) -> Callable[[re.Match[str], date | None], date | None]:
    def resolve(_match: re.Match[str], base: date | None) -> date | None:
        if base is None:
            return None
        if weeks_ahead == 0 and base.weekday() > weekday_index:  # said at the weekend: the coming week's
            return monday_of_week(base, 1) + timedelta(days=weekday_index)
        return monday_of_week(base, weeks_ahead) + timedelta(days=weekday_index)

    return resolve


def _count(match: re.Match[str], base: date | None) -> date | None:
    if base is None:
        return None
    raw = " ".join(match["count"].lower().split())
    count = int(raw) if raw.isdigit() else COUNTS[raw]
    unit = match["unit"].lower()
    if unit == "hour":  # "within 48 hours": the day those hours end on, counted from the meeting's
        return shift(base, days=-(-count // 24))
    if unit == "fortnight":
        return shift(base, days=14 * count)
    if unit == "day":
        return shift(base, days=count)
    if unit == "week":
        return shift(base, weeks=count)
    return shift(base, months=count)


def _mid_named_month(match: re.Match[str], base: date | None) -> date | None:
    month = _month_of(match)
    return on_or_after(base, month, 15) if month is not None and base is not None else None


def _month_day(months_ahead: int, day: int) -> Callable[[re.Match[str], date | None], date | None]:
    return lambda _match, base: shift(base, months=months_ahead, day=day) if base else None


def _month_end(months_ahead: int) -> Callable[[re.Match[str], date | None], date | None]:
    return lambda _match, base: shift(base, months=months_ahead, day=31) if base else None


def _end_of_named_month(match: re.Match[str], base: date | None) -> date | None:
    month = _month_of(match)
    if month is None or base is None:
        return None
    year = base.year if month >= base.month else base.year + 1
    return shift(date(year, month, 1), day=31)


def _named_quarter(match: re.Match[str], base: date | None) -> date | None:
    quarter = int(match["quarter"])
    if match["year"]:
        return quarter_end(int(match["year"]), quarter)
    if base is None:
        return None
    end = quarter_end(base.year, quarter)
    return end if end >= base else quarter_end(base.year + 1, quarter)


def _relative_quarter(quarters_ahead: int) -> Callable[[re.Match[str], date | None], date | None]:
    def resolve(_match: re.Match[str], base: date | None) -> date | None:
        if base is None:
            return None
        first_month = base.replace(day=1, month=3 * ((base.month - 1) // 3) + 1)
        return shift(first_month, months=3 * quarters_ahead + 2, day=31)

    return resolve


def _year_end(_match: re.Match[str], base: date | None) -> date | None:
    return date(base.year, 12, 31) if base else None


def _phrase(
    pattern: str,
    resolve: Callable[[re.Match[str], date | None], date | None],
    *,
    weak: bool = False,
    needs_cue: bool = False,
    case_sensitive: bool = False,
) -> _Phrase:
    return _Phrase(re.compile(pattern, 0 if case_sensitive else re.I), resolve, weak, needs_cue)


PHRASES = (
    _phrase(r"\b(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})\b", _iso),
    _phrase(rf"\b{_MONTH}\s+(?:the\s+)?{_DAY}\b(?!\s*(?:%|percent|[:.]\d|[ap]\.?m\b)){_YEAR}", _calendar_date),
    _phrase(rf"\b(?:the\s+)?{_DAY_BEFORE_MONTH}\s+(?:of\s+)?{_MONTH}(?!\w){_YEAR}", _calendar_date),
    _phrase(
        r"(?<![\d/.,])(?P<first>\d{1,2})/(?P<second>\d{1,2})(?:/(?P<year>\d{4}|\d{2}))?(?![\d/]|\s+of\b)(?<!24/7)",
        _numeric_date,
        needs_cue=True,
    ),
    _phrase(rf"\bthe\s+{_ORDINAL}(?!-)\b", _day_of_month, needs_cue=True),
    _phrase(
        rf"\b(?:(?P<modifier>this(?:\s+coming)?|next|coming)\s+)?{_WEEKDAY}\b"
        r"(?:\s+(?P<next_week>next\s+week)|\s+(?P<week_after>week)\b)?",
        _weekday,
    ),
    # "Friday the 18th", "Thursday, December 3": the date decides, the weekday only names it.
    _phrase(rf"\b{_WEEKDAY},?\s+(?:the\s+)?{_ORDINAL}\b", _day_of_month),
    _phrase(rf"\b{_WEEKDAY},?\s+{_MONTH}\s+{_DAY}\b{_YEAR}", _calendar_date),
    _phrase(rf"\b{_WEEKDAY},?\s+(?:the\s+)?{_DAY_BEFORE_MONTH}\s+(?:of\s+)?{_MONTH}(?!\w){_YEAR}", _calendar_date),
    _phrase(r"\b(?:the\s+)?day\s+after\s+tomorrow\b", _offset(2)),
    _phrase(r"\btomorrow\b", _offset(1)),
    _phrase(r"\b(?:today|tonight|this\s+(?:morning|afternoon|evening))\b", _offset(0)),
    _phrase(
        r"\b(?:EOD|COB|EOB)\b|(?<!\bat\s)(?<!\bat\sthe\s)\b(?:the\s+)?(?:end|close)\s+of\s+(?:the\s+)?(?:day|business)\b",
        _offset(0),
        weak=True,
    ),
    _phrase(r"\b(?:(?:the\s+)?end\s+of\s+)?next\s+week\b", _week_day(1, 4)),
    _phrase(r"\b(?:(?:the\s+)?end\s+of\s+)?the\s+week\s+after\s+next\b", _week_day(2, 4)),
    _phrase(r"\bthis\s+time\s+next\s+week\b", _offset(7)),
    _phrase(r"\bearly\s+next\s+week\b|\bnext\s+week\s+early\b", _week_day(1, 0)),
    _phrase(r"\bmid(?:dle\s+of|-|\s+)next\s+week\b", _week_day(1, 2)),
    _phrase(
        r"\b(?:the\s+)?end\s+of\s+(?:the\s+|this\s+)?(?:working\s+)?week\b|\bthis\s+week\b|\bthe\s+weekend\b", _week_day(0, 4)
    ),
    _phrase(rf"\b(?:in|within)\s+(?:the\s+next\s+)?{_COUNT}\s+(?P<unit>hour|day|week|fortnight|month)s?\b", _count),
    _phrase(rf"\b{_COUNT}\s+(?P<unit>day|week|month)s?\s+from\s+(?:now|today)\b", _count),
    _phrase(rf"\bgive\s+(?:me|us|them|him|her)\s+(?:about\s+)?{_COUNT}\s+(?P<unit>day|week|month)s?\b", _count),
    _phrase(r"\b(?:the\s+)?end\s+of\s+(?:the\s+|this\s+)?month\b|\bmonth[-\s]end\b|\bthis\s+month\b", _month_end(0)),
    _phrase(r"\b(?:(?:the\s+)?end\s+of\s+)?next\s+month\b", _month_end(1)),
    _phrase(rf"\b(?:the\s+)?end\s+of\s+{_MONTH}(?!\w)", _end_of_named_month),
    _phrase(rf"\b(?:the\s+)?mid(?:dle\s+of\s+|-|\s+){_MONTH}(?!\w)", _mid_named_month),
    _phrase(r"\b(?:the\s+)?mid(?:dle\s+of\s+|-|\s+)next\s+month\b", _month_day(1, 15)),
    # "in Q4", "by end of Q2": a quarter after a preposition; "the Q3 numbers" names a topic, not a deadline.
    _phrase(
        r"\b(?i:in|by|before|until|for|during|within|end\s+of|the\s+end\s+of)\s+Q(?P<quarter>[1-4])\b(?:\s+(?P<year>\d{4}))?",
        _named_quarter,
        case_sensitive=True,
    ),
    _phrase(r"\b(?:the\s+)?end\s+of\s+(?:the\s+|this\s+)?quarter\b|\bthis\s+quarter\b", _relative_quarter(0)),
    _phrase(r"\b(?:(?:the\s+)?end\s+of\s+)?next\s+quarter\b", _relative_quarter(1)),
    _phrase(r"\b(?:the\s+)?end\s+of\s+(?:the\s+|this\s+)?year\b|\byear[-\s]end\b", _year_end),
)
