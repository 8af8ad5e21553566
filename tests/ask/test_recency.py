"""Of near-equal sentences, an extractive answer quotes the later meeting's first: it says how things stand now."""

from __future__ import annotations

from datetime import date

import pytest

from tests.api.conftest import call
from tests.backfill.conftest import ingest_file

pytestmark = pytest.mark.slow

MEETINGS = {
    date(2026, 3, 2): "Maria Lopez: Morning all.\nTom Reyes: The freezer inventory count came to 412 boxes.\n",
    date(
        2026, 4, 20
    ): "Maria Lopez: Quick one.\nTom Reyes: The freezer inventory count this time came to 431 boxes, checked twice.\n",
}


@pytest.fixture
def lab(db, local_embedder, tmp_path):
    for day, text in MEETINGS.items():
        path = tmp_path / f"{day}-stock-check.txt"
        path.write_text(text, encoding="utf-8")
        ingest_file(db, path, local_embedder, project="lab", tenant="acme", meeting_date=day)
    return db


def test_the_later_meetings_sentence_is_quoted_first(lab):
    status, body = call(
        "POST", "/v1/ask", {"question": "How many boxes did the freezer inventory count come to?", "project_ids": ["lab"]}
    )

    assert status == 200, body
    quotes = [line for line in body["answer"].splitlines() if line.startswith("- ")]
    assert "431 boxes" in quotes[0] and "2026-04-20" in quotes[0], body["answer"]
    assert any("412 boxes" in line and "2026-03-02" in line for line in quotes[1:])  # the earlier one still shown


def test_lateness_spans_the_candidates_dates():
    from rag.ask.citations import Passage
    from rag.ask.extractive import Sentence, _lateness

    def said_on(day):
        passage = Passage("chunk", "d", "s3://b/k", "t", 0, 5, meeting_date=day)
        return Sentence("words", None, passage, 0)

    days = [date(2026, 1, 1), None, date(2026, 1, 11), date(2026, 1, 6)]
    assert _lateness([said_on(d) for d in days]) == [0.0, 0.0, 1.0, 0.5]
    assert _lateness([said_on(date(2026, 1, 1))] * 2) == [0.0, 0.0]
