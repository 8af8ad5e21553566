"""AssemblyAI's transcript JSON: ``{"utterances": [{"speaker", "text", "start", "end"}], "words", "text"}``.

Times are milliseconds. With speaker labels, each utterance is a turn (a speaker's
consecutive utterances merged); speakers ``A``, ``B`` read ``Speaker A`` as AssemblyAI's
own examples print them, and a name from speaker identification is kept. Without speaker
labels ``utterances`` is null and the ``words`` (or the ``text``) are cut at sentence ends.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from rag.parsing.json_format import JsonFormat, ServiceModel, validated
from rag.parsing.model import ParsedDocument
from rag.parsing.turns import UNKNOWN, RawTurn, Word, merge_consecutive, speaker_label, transcript_of, word_turns

LABEL = "AssemblyAI"
MS = 1000.0


class _Spoken(ServiceModel):
    text: str
    start: float | None = Field(default=None, ge=0)
    end: float | None = Field(default=None, ge=0)
    speaker: str | None = None


class _Output(ServiceModel):
    utterances: list[_Spoken] | None = None
    words: list[_Spoken] | None = None
    text: str | None = None


def matches(value: dict[str, Any]) -> bool:
    utterances = value.get("utterances", False)
    return isinstance(utterances, list) or (utterances is None and isinstance(value.get("words"), list))


def parse(value: dict[str, Any], name: str) -> ParsedDocument:
    output = validated(_Output, value, name, LABEL)
    raw: list[RawTurn]
    if output.utterances:
        raw = merge_consecutive(
            (speaker_label(u.speaker) or UNKNOWN, u.text, _seconds(u.start), _seconds(u.end)) for u in output.utterances
        )
    elif output.words:
        raw = word_turns(Word(speaker_label(w.speaker), w.text, _seconds(w.start), _seconds(w.end)) for w in output.words)
    else:
        raw = [(UNKNOWN, output.text or "", None, None)]
    return transcript_of(raw, name, "assemblyai")


def _seconds(ms: float | None) -> float | None:
    return None if ms is None else round(ms / MS, 3)


FORMAT = JsonFormat(LABEL, '{"utterances": [{"speaker", "text", "start", "end"}]}', matches, parse)
