"""Calendar arithmetic of due dates (``rag.backfill.due_dates``): python-dateutil's ``relativedelta``, typed."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from dateutil.relativedelta import relativedelta


def shift(base: date, **delta: Any) -> date:
    """``base`` moved by a ``relativedelta`` (dateutil's result typed)."""
    moved: date = base + relativedelta(**delta)
    return moved


def safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def on_or_after(base: date, month: int, day: int) -> date | None:
    """The next ``month``/``day`` on or after ``base`` (this year's, else next year's)."""
    for year in (base.year, base.year + 1):
        candidate = safe_date(year, month, day)
        if candidate and candidate >= base:
            return candidate
    return None


def monday_of_week(base: date, weeks_ahead: int) -> date:
    return base - timedelta(days=base.weekday()) + timedelta(weeks=weeks_ahead)


def quarter_end(year: int, quarter: int) -> date:
    return shift(date(year, 3 * quarter, 1), day=31)
