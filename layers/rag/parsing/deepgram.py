"""Deepgram's pre-recorded response: ``{"results": {"channels": [...], "utterances"?: [...]}}``.

Turns come from the richest part present: ``results.utterances`` (``utterances=true``),
else the first channel's ``paragraphs`` (``paragraphs=true``: sentences under one
speaker), else its ``words`` (a speaker's consecutive words, ``punctuated_word`` when
present), else its ``transcript``. Speakers are numbers with ``diarize=true``; they read
``Speaker 0`` as Deepgram's own paragraph transcript writes them. Times are seconds.
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
    best = next((channel.alternatives[0] for channel in results.channels if channel.alternatives), _Alternative())
    raw: list[RawTurn]
    if results.utterances:
        raw = merge_consecutive((_speaker(u.speaker), u.transcript, u.start, u.end) for u in results.utterances)
    elif best.paragraphs and best.paragraphs.paragraphs:
        raw = merge_consecutive(
            (_speaker(p.speaker), " ".join(s.text for s in p.sentences), p.start, p.end) for p in best.paragraphs.paragraphs
        )
    elif best.words:
        raw = word_turns(Word(speaker_label(w.speaker), w.punctuated_word or w.word, w.start, w.end) for w in best.words)
    else:
        raw = [(UNKNOWN, best.transcript, None, None)]
    return transcript_of(raw, name, "deepgram")


def _speaker(value: int | None) -> str:
    return speaker_label(value) or UNKNOWN


FORMAT = JsonFormat(LABEL, '{"results": {"channels": [...], "utterances"?}}', matches, parse)
