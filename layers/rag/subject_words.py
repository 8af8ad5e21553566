"""What an item is about, in words: its subject words (PostgreSQL English stems without noise, names or days), how
much each weighs in a project, and an index of which items share a word (rag.timeline links by these).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

MONTHS = frozenset(
    {"januari", "februari", "march", "april", "may", "june", "juli", "august", "septemb", "octob", "novemb", "decemb"}
)
WEEKDAYS = frozenset({"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"})
DATE_WORDS = MONTHS | WEEKDAYS | {"quarter", "q1", "q2", "q3", "q4"}
# Words that say nothing about a subject: how items are phrased, when things are due, what kind they are.
NOISE = frozenset(
    {"decid", "decis", "agre", "go", "let", "will", "need", "think", "can", "could", "would", "like", "get", "make",
     "do", "take", "send", "sent", "check", "look", "write", "ask", "tell", "put", "give", "have", "want", "know",
     "come", "came", "went", "tri", "start", "finish", "done", "one", "two", "thing", "okay", "yeah", "right",
     "pleas", "sure", "us", "risk", "concern", "worri", "issu", "problem", "close", "task", "action", "item",
     "due", "today", "tomorrow", "tonight", "week", "weekend", "month", "day", "eod", "end", "next", "last",
     "also", "well", "back", "first", "new", "now", "way", "bit", "lot", "anyway", "guess", "mayb", "probabl",
     "realli", "just"}
) | MONTHS | WEEKDAYS  # fmt: skip


class Weights:
    """Each subject word's weight: rarer in the project, heavier (smoothed inverse document frequency, at least 1)."""

    def __init__(self, texts: Iterable[frozenset[str]]) -> None:
        counts: Counter[str] = Counter()
        total = 0
        for words in texts:
            counts.update(words)
            total += 1
        self.counts, self.total = counts, total

    def of(self, words: Iterable[str]) -> float:
        return sum(math.log((self.total + 1) / (self.counts.get(word, 0) + 1)) + 1 for word in words)


def subject(words: Iterable[str], names: frozenset[str] = frozenset()) -> frozenset[str]:
    """The words that say what an item is about: no noise, no names, no days ("13th"), no "ll" of "I'll"."""
    return frozenset(
        w for w in words if w not in NOISE and w not in names and not ordinal(w) and not (len(w) <= 2 and w.isalpha())
    )


def ordinal(word: str) -> bool:
    return word[:-2].isdigit() and word[-2:] in ("st", "nd", "rd", "th")


# Number words (English stems): "six runs", "thirty frames", "a hundred and fifty dollars".
NUMBER_WORDS = frozenset(
    {"three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelv", "fifteen", "twenti", "thirti",
     "forti", "fifti", "sixti", "seventi", "eighti", "nineti", "hundr", "thousand", "million", "billion", "percent"}
)  # fmt: skip


def value_kinds(words: Iterable[str]) -> frozenset[str]:
    """Pseudo-words for the kinds of value a decision sets: ``#date`` (a day or a month), ``#number`` (an amount, a
    count, a version: "2021 LTS" -> "2022 LTS", "range 3.1-200" -> "range 6.25 to 200")."""
    words = frozenset(words)
    with_month = bool(words & MONTHS)
    kinds = set()
    for word in words:
        if word in DATE_WORDS or ordinal(word):
            kinds.add("#date")
        elif with_month and day_or_year(word):
            continue  # "May 19", "1 September 2027": a date, not an amount
        elif is_number(word) or word in NUMBER_WORDS:
            kinds.add("#number")
    return frozenset(kinds)


def values(words: Iterable[str]) -> frozenset[str]:
    """The days, months and amounts among ``words``, a day's ordinal as its number: "the 16th" says "16" again."""
    return frozenset(
        w[:-2] if ordinal(w) else w.replace(",", "") for w in words if ordinal(w) or is_number(w) or w in MONTHS | WEEKDAYS
    )


def day_or_year(word: str) -> bool:
    return word.isdigit() and 1 <= int(word) <= 31 or is_year(word)


def is_year(word: str) -> bool:
    return word.isdigit() and 1900 <= int(word) <= 2100


def is_number(word: str) -> bool:
    return word.replace(".", "").replace(",", "").isdigit()


def positions_by_word(word_sets: Iterable[frozenset[str]]) -> dict[str, list[int]]:
    """Each word and the positions of the sets holding it, in order: who can share a word with whom."""
    positions: dict[str, list[int]] = {}
    for position, words in enumerate(word_sets):
        for word in words:
            positions.setdefault(word, []).append(position)
    return positions


def positions_sharing(by_word: dict[str, list[int]], words: Iterable[str]) -> list[int]:
    """The positions (in order) of the sets holding at least one of ``words``: a project's size does not make each
    link compare with every item, only with those on the same subject."""
    return sorted({p for word in words for p in by_word.get(word, ())})
