"""PII masking: what is masked and what must stay (dates, amounts, turn numbers)."""

from __future__ import annotations

import pytest

from rag.ask.redact import redact


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mail maya.k+rc@acme-corp.co.uk today", "mail [email] today"),
        ("card 4111 1111 1111 1111 on file", "card [card number] on file"),
        ("card 4111-1111-1111-1111.", "card [card number]."),
        ("call +1 (415) 555-0132 now", "call [phone] now"),
        ("call 020 7946 0958", "call [phone]"),
        ("ring +4915112345678", "ring [phone]"),
    ],
)
def test_pii_is_masked(text, expected):
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "the meeting on 2026-11-02 decided it",
        "two dollars forty, twelve dollar target, 11.80 per unit",
        "turns 14-22 and chars 1200-2310",
        "order 4111 1111 1111 1112 is not a card (Luhn fails)",
        "version 3.54.0 shipped",
        "budget 250000 for 2027",
    ],
)
def test_what_is_not_pii_stays(text):
    assert redact(text).replace("[phone]", "<PHONE>") == text
