"""Optional PII masking (``RAG_ASK_REDACT_PII``): e-mail addresses, phone numbers, card numbers.

Applied to what the model reads (question, history, tool results) and to the answer.
Card numbers are 13-19 digits (spaces or dashes between groups) that pass the Luhn
check; phone numbers are 7-15 digits with a ``+`` country code or an area code in
brackets, or 10-15 digits with separators. Dates (2026-11-02) and short numbers (twelve dollars, turn 14) are kept.
"""

from __future__ import annotations

import re

EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
CARD = re.compile(r"(?<![\d+-])(?:\d[ -]?){12,18}\d(?![\d-])")
PHONE = re.compile(r"(?<![\w-])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{1,4}\)[\s.-]?)?\d{2,4}(?:[\s.-]?\d{2,4}){1,4}(?![\w-])")
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _card(match: re.Match[str]) -> str:
    digits = re.sub(r"\D", "", match.group())
    return "[card number]" if 13 <= len(digits) <= 19 and _luhn(digits) else match.group()


def _phone(match: re.Match[str]) -> str:
    text = match.group()
    digits = re.sub(r"\D", "", text)
    if DATE.match(text.strip()) or not 7 <= len(digits) <= 15:
        return text
    if not (text.startswith("+") or "(" in text) and len(digits) < 10:
        return text  # without a country code or an area code in brackets, a phone number has 10+ digits
    return "[phone]"


def redact(text: str) -> str:
    text = EMAIL.sub("[email]", text)
    text = CARD.sub(_card, text)
    return PHONE.sub(_phone, text)


def keep(text: str) -> str:
    return text
