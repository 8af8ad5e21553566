"""``.json`` transcripts: ``[{speaker, text, start?, end?}, ...]`` or ``{"turns": [...], title?, meeting_date?, participants?}``,
or the JSON output of a speech service (``SERVICE_FORMATS``, each recognised by its keys).

Turns files are rendered as one ``Speaker: text`` line per item. Every item is a turn, even one with
empty text, so turn i is always the i-th item of the file's list. A ``\u0000`` or a lone
surrogate escape anywhere in the file (a value or a key) is refused, naming where: no
database text can hold it.
"""

from __future__ import annotations

import json
import re
from datetime import date
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rag.errors import ParseError
from rag.parsing import assemblyai, deepgram, transcribe, whisper
from rag.parsing.json_format import MAX_REPORTED_ERRORS, JsonFormat
from rag.parsing.model import ParsedDocument
from rag.parsing.turns import render_turns, speakers_of
from rag.storable_text import describe_unstorable, first_unstorable

SHAPE = 'a list of {"speaker", "text", "start"?, "end"?} turns or {"turns": [...]}'
# In the order they are tried: Transcribe's and Deepgram's "results" hold different keys.
SERVICE_FORMATS: tuple[JsonFormat, ...] = (transcribe.FORMAT, deepgram.FORMAT, assemblyai.FORMAT, whisper.FORMAT)
ACCEPTED = "or the JSON output of " + ", ".join(f.describe() for f in SERVICE_FORMATS)
# The escapes that decode to a NUL or a surrogate: the decoded text holds neither otherwise.
UNSTORABLE_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")


class JsonTurn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    speaker: str | None = None
    text: str
    start: float | None = Field(default=None, ge=0)
    end: float | None = Field(default=None, ge=0)


class JsonTranscript(BaseModel):
    model_config = ConfigDict(extra="ignore")

    turns: list[JsonTurn]
    title: str | None = None
    meeting_date: date | None = None
    participants: list[str] = []

    @field_validator("meeting_date", mode="before")
    @classmethod
    def _date_of_timestamp(cls, value: Any) -> Any:
        # "2026-10-30T10:00:00Z" names a meeting day too: keep its date part.
        return value[:10] if isinstance(value, str) and len(value) > 10 and value[10] in "T " else value


def looks_like_json_transcript(value: Any) -> bool:
    """A shape this parser reads, judged before validation (content detection)."""
    if service_format(value) is not None:
        return True
    if isinstance(value, dict):
        value = value.get("turns")
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) and "text" in v for v in value[:20])


def service_format(value: Any) -> JsonFormat | None:
    """The speech service whose output ``value`` is (a ``turns`` key says it is a turns file)."""
    if not isinstance(value, dict) or "turns" in value:
        return None
    return next((fmt for fmt in SERVICE_FORMATS if fmt.matches(value)), None)


def parse_json_text(text: str, name: str) -> ParsedDocument:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"{name}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from exc
    except RecursionError as exc:
        raise ParseError(f"{name}: JSON nested too deeply; expected {SHAPE}") from exc
    if UNSTORABLE_ESCAPE.search(text):
        refuse_unstorable(value, name)
    service = service_format(value)
    return service.parse(value, name) if service else parse_json_turns(value, name)


def refuse_unstorable(value: Any, name: str) -> None:
    """ParseError naming the first string or key (``turns[3].speaker``) holding a NUL or a lone surrogate."""
    pending: list[tuple[Any, str]] = [(value, "")]
    while pending:  # a stack, not recursion: as deep as json.loads allows
        item, path = pending.pop()
        if isinstance(item, str):
            if found := first_unstorable(item):
                raise ParseError(f"{name}: {path or 'the top-level value'} holds {describe_unstorable(found[0])}")
        elif isinstance(item, dict):
            for key in item:
                if found := first_unstorable(key):
                    where = f" of {path}" if path else ""
                    raise ParseError(f"{name}: the key {json.dumps(key)}{where} holds {describe_unstorable(found[0])}")
            pending.extend((item[key], f"{path}.{key}" if path else key) for key in reversed(list(item)))
        elif isinstance(item, list):
            pending.extend((element, f"{path}[{i}]") for i, element in reversed(list(enumerate(item))))


def parse_json_turns(value: Any, name: str) -> ParsedDocument:
    if not isinstance(value, (list, dict)):
        raise ParseError(f"{name}: expected {SHAPE}, got a JSON {type(value).__name__}")
    listed = isinstance(value, list)
    try:
        transcript = JsonTranscript.model_validate({"turns": value} if listed else value)
    except ValidationError as exc:
        # A dict without "turns" may have been meant as any accepted shape: name them all.
        expected = SHAPE if listed or "turns" in value else f"{SHAPE}, {ACCEPTED}"
        raise ParseError(f"{name}: expected {expected}; {_summary(exc, listed)}") from exc
    if not transcript.turns:
        raise ParseError(f"{name}: the transcript has no turns")
    text, turns = render_turns(((t.speaker or "", t.text, t.start, t.end) for t in transcript.turns), keep_empty=True)
    return ParsedDocument(
        kind="transcript",
        format="json",
        text=text,
        turns=turns,
        title=transcript.title,
        meeting_date=transcript.meeting_date,
        participants=transcript.participants or speakers_of(turns),
    )


def _summary(exc: ValidationError, listed: bool) -> str:
    """``item 3, field "text": Field required`` for the first few problems."""
    problems = []
    for error in exc.errors()[:MAX_REPORTED_ERRORS]:
        loc = list(error["loc"])
        if listed and loc[:1] == ["turns"]:
            loc = loc[1:]  # the file is the list itself: no "turns" key to name
        where = []
        if len(loc) >= 2 and loc[0] == "turns" and isinstance(loc[1], int):
            where.append(f"turns[{loc[1]}]")
            loc = loc[2:]
        elif loc and isinstance(loc[0], int):
            where.append(f"item {loc[0]}")
            loc = loc[1:]
        if loc:
            where.append(f'field "{".".join(str(p) for p in loc)}"')
        problems.append(f"{', '.join(where) or 'top level'}: {error['msg']}")
    more = exc.error_count() - len(problems)
    return "; ".join(problems) + (f" (and {more} more)" if more > 0 else "")
