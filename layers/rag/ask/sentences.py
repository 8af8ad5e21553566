"""Sentence spans of a turn, with numbers, amounts, versions and abbreviations kept whole.

A sentence ends at ``.``, ``!`` or ``?`` (closing quotes and brackets included) followed by a
space or the end of the text, unless the word before the stop is an abbreviation ("e.g.",
"Dr.", "approx."), an initial ("J. Smith") or the next sentence would start in lower case
("about 0.3 percent. and then" stays one). A stop inside a token ("$1.2", "v2.1", "0.3",
"Mr.Chair") is never an end: only a stop followed by a space is.

Libraries considered: pysbd (pure Python) has had no release since February 2021; sentencex's
current release is a compiled wheel (1.2 MB for one Python version). Neither is worth a layer
dependency for the rules that matter here (never split inside a token, nor after an abbreviation).
"""

from __future__ import annotations

import re

# Lower case, without the stop; a stop after any of these does not end a sentence.
ABBREVIATIONS = frozenset(
    "e.g eg i.e ie etc vs approx incl excl est cf al fig no nos vol p pp ch sec dept div co corp inc ltd jr sr st ave "
    "mr mrs ms dr prof rev hon gen sgt capt lt col mt ft jan feb mar apr jun jul aug sep sept oct nov dec mon tue tues "
    "wed thu thurs fri sat sun a.m p.m am pm u.s u.k e.u".split()
)  # fmt: skip
_STOP = re.compile(r"[.!?]+[\"'\u201d\u2019)\]]*(?=\s|$)")
_WORD_BEFORE = re.compile(r"([\w.]+)\.$")
_NEXT = re.compile(r"\s*(\S)")


def _ends_sentence(text: str, stop: re.Match[str]) -> bool:
    mark = stop.group()
    if mark.startswith(".") and mark.rstrip("\"'\u201d\u2019)]") == ".":
        before = _WORD_BEFORE.search(text, max(0, stop.start() - 40), stop.start() + 1)
        word = before.group(1).lower() if before else ""
        if word in ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
            return False
    following = _NEXT.match(text, stop.end())
    return following is None or not following.group(1).islower()


def sentence_spans(text: str, start: int = 0) -> list[tuple[int, int]]:
    """(start, end) of each sentence of ``text[start:]``, spaces around it excluded."""
    spans = []
    begin = start
    for stop in _STOP.finditer(text, start):
        if _ends_sentence(text, stop):
            spans.append((begin, stop.end()))
            begin = stop.end()
    spans.append((begin, len(text)))
    trimmed = []
    for s, e in spans:
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e > s:
            trimmed.append((s, e))
    return trimmed
