"""What a question is about: the words that only describe the meeting itself are dropped.

"What did the group discuss about the remote's buttons?" is about the remote's buttons.
Words such as *group*, *discuss*, *meeting* or *summarize* fit every passage of every
meeting alike: in the query's embedding they pull it towards talk about talk, and in
BM25 they match turns that merely say "let's discuss". Both sides search the remaining
words (the query log keeps the question as asked); a question made only of such words
(or only function words) is searched as asked.
"""

from __future__ import annotations

import re

from rag.index_text import index_text

# Words about the conversation, not its content (inflections listed; the keyword side stems anyway).
MEETING_WORDS = (
    "summari[sz]e", "summary", "discuss", "discussed", "discussing", "discussion", "discussions",
    "talk", "talks", "talked", "say", "says", "said", "mention", "mentioned", "describe",
    "think", "thought", "thoughts", "opinion", "opinions", "view", "views", "please",
    "meeting", "meetings", "group", "team", "member", "members",
)  # fmt: skip
_MEETING_WORD = re.compile(r"\b(?:" + "|".join(MEETING_WORDS) + r")\b", re.IGNORECASE)
# Left with only these, a question had no subject of its own (for example "Summarize the meeting").
FUNCTION_WORDS = frozenset(
    "a about an and are as at by did do does for from he how i in is it me my of on or our she so that the their "
    "them they this to us "
    "was we were what when where which who why with you your".split()
)
_SPACES = re.compile(r"\s+")
_WORD = re.compile(r"\w+")


def search_text(query: str) -> str:
    """The words of ``query`` that say what it is about (markers and meeting words dropped)."""
    remaining = _SPACES.sub(" ", _MEETING_WORD.sub(" ", index_text(query))).strip(" ?.!,;:")
    has_subject = any(word.lower() not in FUNCTION_WORDS for word in _WORD.findall(remaining))
    return remaining if has_subject else query
