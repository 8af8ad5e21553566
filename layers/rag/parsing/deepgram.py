"""Deepgram's pre-recorded response: ``{"results": {"channels": [...], "utterances"?: [...]}}``.

Turns come from the richest part present: ``results.utterances`` (``utterances=true``),
else each channel's ``paragraphs`` (``paragraphs=true``: sentences under one speaker),
else its ``words`` (a speaker's consecutive words, ``punctuated_word`` when present),
else its ``transcript``; several channels' turns interleave by start time. Speakers are numbers with ``diarize=true``; they read
``Speaker 0`` as Deepgram's own paragraph transcript writes them; with ``multichannel=true``
and no diarization, a channel is its speaker (``Channel 1``). Times are seconds.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from rag.parsing.json_format import JsonFormat, ServiceModel, validated
from rag.parsing.model import ParsedDocument
from rag.parsing.turns import UNKNOWN, RawTurn, Word, merge_consecutive, speaker_label, transcript_of, word_turns

LABEL = "Deepgram"


class _Timed(ServiceModel):
    start: float | None = Field(default=None, ge=0)
    end: float | None = Field(default=None, ge=0)


class _Word(_Timed):
    word: str
    punctuated_word: str | None = None
    speaker: int | None = None


class _Sentence(_Timed):
    text: str


class _Paragraph(_Timed):
    sentences: list[_Sentence]
    speaker: int | None = None


class _Paragraphs(ServiceModel):
    paragraphs: list[_Paragraph] = []


class _Alternative(ServiceModel):
    transcript: str = ""
    words: list[_Word] = []
    paragraphs: _Paragraphs | None = None


class _Channel(ServiceModel):
    alternatives: list[_Alternative] = []


class _Utterance(_Timed):
    transcript: str
    speaker: int | None = None
    channel: int = 0


class _Results(ServiceModel):
    channels: list[_Channel] = []
    utterances: list[_Utterance] | None = None


class _Output(ServiceModel):
    results: _Results


def matches(value: dict[str, Any]) -> bool:
    results = value.get("results")
    return isinstance(results, dict) and ("channels" in results or "utterances" in results)


def parse(value: dict[str, Any], name: str) -> ParsedDocument:
    results = validated(_Output, value, name, LABEL).results
    # With multichannel=true each channel is a side of a call: a side without diarization is named by its channel.
    several = len(results.channels) > 1
    raw: list[RawTurn]
    if results.utterances:
        raw = merge_consecutive(
            (_speaker(u.speaker, u.channel if several else None), u.transcript, u.start, u.end) for u in results.utterances
        )
    else:
        raw = []
        for index, channel in enumerate(results.channels):
            if channel.alternatives:
                raw.extend(_channel_turns(channel.alternatives[0], index if several else None))
        # Channels are transcribed apart: their turns interleave by start time (untimed ones last, in order).
        raw = merge_consecutive(sorted(raw, key=lambda turn: turn[2] if turn[2] is not None else float("inf")))
    return transcript_of(raw, name, "deepgram")


def _channel_turns(best: _Alternative, channel: int | None) -> list[RawTurn]:
    if best.paragraphs and best.paragraphs.paragraphs:
        return [
            (_speaker(p.speaker, channel), " ".join(s.text for s in p.sentences), p.start, p.end)
            for p in best.paragraphs.paragraphs
        ]
    if best.words:
        words = word_turns(Word(speaker_label(w.speaker), w.punctuated_word or w.word, w.start, w.end) for w in best.words)
        return [
            (speaker if speaker != UNKNOWN else _speaker(None, channel), text, start, end) for speaker, text, start, end in words
        ]
    return [(_speaker(None, channel), best.transcript, None, None)]


def _speaker(value: int | None, channel: int | None) -> str:
    return speaker_label(value) or (f"Channel {channel}" if channel is not None else UNKNOWN)


FORMAT = JsonFormat(LABEL, '{"results": {"channels": [...], "utterances"?}}', matches, parse)
