"""What kind of answer a question asks for, and whether a sentence holds one.

"When is the hearing?" is answered by a sentence with a date in it, "How big is the gap?" by one with an amount, "Who
owns the export?" by one that names someone. A sentence about the hearing without its date is close to the question in
meaning and answers nothing; the extractive answer (``rag.ask.extractive``) ranks the sentences that hold the kind of
answer asked for first among near-equals.
"""

from __future__ import annotations

import re

_MONTHS = (
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?"
    r"|nov(?:ember)?|dec(?:ember)?"
)
_WEEKDAYS = r"monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_NUMBER_WORDS = (
    r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty|sixty|seventy"
    r"|eighty|ninety|hundred|thousand|million|billion|half|double|percent"
)
_DATE = re.compile(
    rf"\b(?:{_MONTHS})\b\.?\s*\d{{0,2}}|\b(?:{_WEEKDAYS})\b|\b\d{{1,2}}(?:st|nd|rd|th)\b|\b\d{{4}}-\d{{2}}-\d{{2}}\b"
    r"|\b\d{1,2}/\d{1,2}\b|\b(?:tomorrow|tonight|next (?:week|month|quarter|year)|end of (?:the )?(?:week|month|quarter|year))\b"
    r"|\bq[1-4]\b|\b(?:mid|early|late)-?\s?(?:" + _MONTHS + r")\b",
    re.IGNORECASE,
)
_AMOUNT = re.compile(rf"\d|[$€£%]|\b(?:{_NUMBER_WORDS})\b", re.IGNORECASE)
# A name: two capitalised words, or one after a word that introduces a person ("Raj will", "owner is Dana").
_PERSON = re.compile(r"\b[A-Z][a-z]+ [A-Z][a-z]+\b|\b[A-Z][a-z]+(?= (?:will|is going to|takes|owns|has|'ll)\b)")

_ASKS_DATE = re.compile(r"^\s*when\b|\bby when\b|\bwhat (?:date|day|time)\b|\bdeadline\b|\bhow soon\b|\bdue\b", re.I)
_ASKS_AMOUNT = re.compile(
    r"\bhow (?:much|many|big|large|long|high|low|far|fast)\b|\bwhat (?:is|was|are) the (?:\w+ ){0,2}(?:cost|price|budget|cap"
    r"|rate|limit|gap|target|number|size|amount|total|percentage|fee)\b|\bwhat (?:\w+ )?(?:rate|percentage|price)\b",
    re.I,
)
_ASKS_PERSON = re.compile(r"^\s*who\b|\bwho (?:is|will|owns|has)\b|\bwhich (?:person|people|team)\b", re.I)


def asked_for(question: str) -> frozenset[str]:
    """The kinds of answer the question asks for: ``date``, ``amount``, ``person`` (none for what and why)."""
    kinds = set()
    if _ASKS_DATE.search(question):
        kinds.add("date")
    if _ASKS_AMOUNT.search(question):
        kinds.add("amount")
    if _ASKS_PERSON.search(question):
        kinds.add("person")
    return frozenset(kinds)


def holds(sentence: str, kind: str, speaker: str | None = None) -> bool:
    """Whether ``sentence`` holds an answer of ``kind``; a speaker who commits ("I'll ...") names themself."""
    if kind == "date":
        return _DATE.search(sentence) is not None
    if kind == "amount":
        return _AMOUNT.search(sentence) is not None
    if kind == "person":
        committed = speaker is not None and re.search(r"\bI(?:'ll| will| can| am going to)\b", sentence) is not None
        return committed or _PERSON.search(sentence) is not None
    raise ValueError(f"unknown kind of answer: {kind!r}")


def share_held(sentence: str, kinds: frozenset[str], speaker: str | None = None) -> float:
    """The share of the asked kinds the sentence holds (0 when the question asks for none)."""
    if not kinds:
        return 0.0
    return sum(holds(sentence, kind, speaker) for kind in kinds) / len(kinds)
