"""Whisper's and WhisperX's JSON output: ``{"segments": [{"start", "end", "text", "speaker"?}]}``.

Whisper writes seconds and no speakers; WhisperX, after diarization, adds ``speaker``
(``SPEAKER_00``, kept as written) to each segment it could assign. A speaker's
consecutive segments form one turn; a segment without a speaker is a turn of its own
("Unknown"), as a caption cue without a voice is.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from rag.parsing.json_format import JsonFormat, ServiceModel, validated
from rag.parsing.model import ParsedDocument
from rag.parsing.turns import UNKNOWN, merge_consecutive, transcript_of

LABEL = "Whisper / WhisperX"


class _Segment(ServiceModel):
    text: str
    start: float | None = Field(default=None, ge=0)
    end: float | None = Field(default=None, ge=0)
    speaker: str | None = None


class _Output(ServiceModel):
    segments: list[_Segment]


def matches(value: dict[str, Any]) -> bool:
    return isinstance(value.get("segments"), list)


def parse(value: dict[str, Any], name: str) -> ParsedDocument:
    segments = validated(_Output, value, name, LABEL).segments
    raw = merge_consecutive((s.speaker or UNKNOWN, s.text, s.start, s.end) for s in segments)
    return transcript_of(raw, name, "whisper")


FORMAT = JsonFormat(LABEL, '{"segments": [{"start", "end", "text", "speaker"?}]}', matches, parse)
