"""Zoom's in-meeting chat, saved as text.

Saved from the meeting: ``10:02:15 From Sofia Ruiz to Everyone:`` with the message on the
tab-indented line(s) after it (older clients: ``10:02:15\t From  Sofia Ruiz  to  Everyone :
message`` on one line, or without ``to ...``). The times are the clock's, not the
recording's, so turns get no start time. From a cloud recording: ``00:58:04\\tSofia Ruiz:\\t
message``, timed from the start of the recording. Each message is a turn of its sender.
"""

from __future__ import annotations

import re

from rag.errors import ParseError
from rag.parsing.line_turns import Opening, scan_turns
from rag.parsing.model import ParsedDocument
from rag.parsing.turns import seconds, speakers_of

_TIME = r"(?P<time>\d{1,2}:\d{2}:\d{2})"
# Names are bounded (as a speaker's are) so a long line without the colon fails fast, not in quadratic time.
_NAME = r"[^\t:]{1,160}?"
SAVED = re.compile(
    rf"^{_TIME}[ \t]+From[ \t]+(?P<sender>{_NAME})(?:[ \t]+to[ \t]+(?P<to>{_NAME}))?[ \t]*:(?:[ \t]+(?P<text>.*?))?[ \t]*$"
)
CLOUD = re.compile(rf"^{_TIME}\t(?P<sender>{_NAME})[ \t]*:\t(?P<text>.*?)[ \t]*$")


def opening(line: str) -> Opening | None:
    if (saved := SAVED.match(line)) is not None:
        return " ".join(saved["sender"].split()), saved["text"] or "", None
    if (cloud := CLOUD.match(line)) is not None:
        return " ".join(cloud["sender"].split()), cloud["text"], seconds(cloud["time"])
    return None


def matches(text: str) -> bool:
    first = next((line for line in text.split("\n") if line.strip()), "")
    return opening(first) is not None


def parse(text: str, name: str) -> ParsedDocument:
    turns = scan_turns(text, opening).turns
    if not turns:
        raise ParseError(f"{name}: no Zoom chat messages found")
    return ParsedDocument(kind="transcript", format="zoom-chat", text=text, turns=turns, participants=speakers_of(turns))
