"""Amazon Transcribe's JSON output (a batch job's transcript file, with or without speaker labels).

``results.items`` holds one item per word (``pronunciation``, with ``start_time``/``end_time``
as strings of seconds) or punctuation mark (no times: it is written after the word before
it). A speaker's consecutive words form one turn; the speaker is the item's ``speaker_label``
or, in older output, the ``results.speaker_labels.segments`` item starting at the same time;
with channel identification instead (a call: one channel per side), its ``channel_label``.
Without items, ``results.audio_segments`` (one per speaker stretch) are the turns; without
either, the ``results.transcripts`` text. Speakers keep Transcribe's labels (``spk_0``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from rag.parsing.json_format import JsonFormat, ServiceModel, validated
from rag.parsing.model import ParsedDocument
from rag.parsing.turns import UNKNOWN, RawTurn, Word, merge_consecutive, transcript_of, word_turns

LABEL = "Amazon Transcribe"


class _Alternative(ServiceModel):
    content: str


class _Item(ServiceModel):
    type: Literal["pronunciation", "punctuation"] = "pronunciation"
    alternatives: list[_Alternative] = Field(min_length=1)
    start_time: float | None = Field(default=None, ge=0)
    end_time: float | None = Field(default=None, ge=0)
    speaker_label: str | None = None
    channel_label: str | None = None


class _LabelledTime(ServiceModel):
    start_time: float
    speaker_label: str


class _SpeakerSegment(ServiceModel):
    items: list[_LabelledTime] = []


class _SpeakerLabels(ServiceModel):
    segments: list[_SpeakerSegment] = []


class _AudioSegment(ServiceModel):
    transcript: str
    start_time: float | None = Field(default=None, ge=0)
    end_time: float | None = Field(default=None, ge=0)
    speaker_label: str | None = None
    channel_label: str | None = None


class _Transcript(ServiceModel):
    transcript: str


class _Results(ServiceModel):
    transcripts: list[_Transcript] = []
    items: list[_Item] = []
    speaker_labels: _SpeakerLabels | None = None
    audio_segments: list[_AudioSegment] = []


class _Output(ServiceModel):
    results: _Results


def matches(value: dict[str, Any]) -> bool:
    results = value.get("results")
    return isinstance(results, dict) and any(key in results for key in ("items", "transcripts", "audio_segments"))


def parse(value: dict[str, Any], name: str) -> ParsedDocument:
    results = validated(_Output, value, name, LABEL).results
    raw: list[RawTurn]
    if results.items:
        # Older output labels speakers only in speaker_labels.segments, matched by start time.
        labelled = {
            item.start_time: item.speaker_label
            for segment in (results.speaker_labels.segments if results.speaker_labels else [])
            for item in segment.items
        }
        raw = word_turns(
            Word(
                item.speaker_label
                or (labelled.get(item.start_time) if item.start_time is not None else None)
                or item.channel_label,
                item.alternatives[0].content,
                item.start_time,
                item.end_time,
                joins_previous=item.type == "punctuation",
            )
            for item in results.items
        )
    elif results.audio_segments:
        raw = merge_consecutive(
            (s.speaker_label or s.channel_label or UNKNOWN, s.transcript, s.start_time, s.end_time)
            for s in results.audio_segments
        )
    else:
        raw = [(UNKNOWN, t.transcript, None, None) for t in results.transcripts]
    return transcript_of(raw, name, "amazon-transcribe")


FORMAT = JsonFormat(LABEL, '{"results": {"transcripts", "items"}}', matches, parse)
