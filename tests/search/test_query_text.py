from __future__ import annotations

import pytest

from rag.search.query_text import search_text


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What did the group discuss about the remote's buttons?", "What did the about the remote's buttons"),
        ("Summarize the team's opinion on {vocalsound} pricing.", "the 's on pricing"),
        ("battery supplier", "battery supplier"),
        # Only meeting words: searched as asked rather than as nothing.
        ("Summarize the meeting", "Summarize the meeting"),
        ("{disfmarker}", "{disfmarker}"),
    ],
)
def test_meeting_words_and_markers_leave_the_query(query: str, expected: str):
    assert search_text(query) == expected


def test_words_that_merely_contain_a_meeting_word_stay():
    assert search_text("teamwork in the grouping of sayings") == "teamwork in the grouping of sayings"


def test_a_question_left_with_function_words_only_is_searched_as_asked():
    assert search_text("What did they talk about?") == "What did they talk about?"
