"""``.json`` transcripts: ``[{speaker, text, start?, end?}]`` or ``{"turns": [...], title?, meeting_date?, participants?}``."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from rag.errors import ParseError
from rag.parsing.model import ParsedDocument
from rag.parsing.turns import render_turns


class JsonTurn(BaseModel):
    model_config = ConfigDict(extra="ignore")
    speaker: str = "Unknown"
    text: str
    start: float | None = None
    end: float | None = None


class JsonTranscript(BaseModel):
    model_config = ConfigDict(extra="ignore")
    turns: list[JsonTurn]
    title: str | None = None
    meeting_date: date | None = None
    participants: list[str] = []


def looks_like_json_turns(value: Any) -> bool:
    return isinstance(value, list) or (isinstance(value, dict) and "turns" in value)


def parse_json_turns(value: Any, name: str) -> ParsedDocument:
    try:
        transcript = JsonTranscript.model_validate({"turns": value} if isinstance(value, list) else value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ParseError(
            f"{name}: expected a list of {{speaker, text, start?, end?}} turns or {{\"turns\": [...]}}; "
            f"{where}: {first['msg']} ({exc.error_count()} problem(s))"
        ) from exc
    text, turns = render_turns((t.speaker, t.text, t.start, t.end) for t in transcript.turns)
    if not turns:
        raise ParseError(f"{name}: the transcript has no turns with text")
    return ParsedDocument(
        kind="transcript",
        format="json",
        text=text,
        turns=turns,
        title=transcript.title,
        meeting_date=transcript.meeting_date,
        participants=transcript.participants or list(dict.fromkeys(t.speaker for t in turns)),
    )


def load_json(text: str) -> Any:
    return json.loads(text)
