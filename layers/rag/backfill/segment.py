"""The segment stage (raw_ingested -> segmented): topic segments with titles and summaries.

- Transcripts with an LLM configured (``RAG_LLM_PROVIDER=openai``): the model proposes
  boundaries, titles and summaries over numbered turns (structured output, validated,
  then normalized into contiguous turn ranges).
- Transcripts offline: TextTiling on the configured embedder's vectors of the turns
  (``rag.backfill.texttiling``); the title is the segment's most distinctive words, the
  summary its most central sentences (extractive, ``central_sentences``).
- Documents: one segment per heading section (the heading is the title, the first
  sentences the summary); a document without headings is one segment.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from rag.backfill import repository
from rag.backfill.documents import ClaimedDocument, TurnSpan
from rag.backfill.errors import LLMOutputError
from rag.backfill.models import Segment
from rag.backfill.runner import ModelStage
from rag.backfill.text import central_sentences, clip, keyword_titles, sentences
from rag.backfill.texttiling import boundaries

if TYPE_CHECKING:
    import psycopg

    from rag.config import Settings
    from rag.embedding.base import Embedder
    from rag.store.backfill_queue import StageName

SUMMARY_CHARS = 400
MIN_SUMMARY_WORDS = 6  # "Yes." or "Okay, good." never summarizes a topic
LLM_WINDOW_TURNS = 400  # turns per LLM call; longer meetings are segmented window by window


class SegmentStage(ModelStage):
    name: StageName = "segment"

    def process(self, conn: psycopg.Connection, document: ClaimedDocument) -> None:
        repository.replace_segments(conn, document, self.segments(document))

    def segments(self, document: ClaimedDocument) -> list[Segment]:
        if document.kind == "transcript" and document.turns:
            if self.settings.llm.provider != "none":
                return segment_with_llm(document, self.settings)
            return segment_by_texttiling(document, self.embedder)
        return segment_by_headings(document)


# --- shared ---------------------------------------------------------------------------


def turn_segment(document: ClaimedDocument, index: int, first: int, last: int, title: str, summary: str, method: str) -> Segment:
    turns = document.turns[first : last + 1]
    speakers = tuple(dict.fromkeys(t.speaker for t in turns if t.speaker))
    return Segment(
        index=index,
        title=clip(title, 200) or f"Part {index + 1}",
        summary=clip(summary, 2000),
        start_char=turns[0].start_char,
        end_char=turns[-1].end_char,
        method=method,
        start_turn=first,
        end_turn=last,
        speakers=speakers,
    )


def ranges_from_starts(starts: Sequence[int], n: int) -> list[tuple[int, int]]:
    """Inclusive turn ranges covering 0..n-1 from the sorted turn indexes where segments start."""
    points = sorted({0, *(s for s in starts if 0 < s < n)})
    return [(start, (points[i + 1] - 1) if i + 1 < len(points) else n - 1) for i, start in enumerate(points)]


# --- offline: TextTiling ----------------------------------------------------------------


def segment_by_texttiling(document: ClaimedDocument, embedder: Embedder) -> list[Segment]:
    turns = document.turns
    vectors = embedder.embed([t.text or t.speaker or "-" for t in turns])
    weights = [math.log1p(len(t.text.split())) for t in turns]
    ranges = ranges_from_starts(boundaries(vectors, weights), len(turns))
    titles = keyword_titles([" ".join(t.text for t in turns[a : b + 1]) for a, b in ranges])
    segments = []
    for index, ((first, last), title) in enumerate(zip(ranges, titles)):
        summary = extractive_summary(turns[first : last + 1])
        segments.append(turn_segment(document, index, first, last, title, summary, "texttiling"))
    return segments


def extractive_summary(turns: Sequence[TurnSpan]) -> str:
    """The segment's most central sentences (``rag.backfill.text.central_sentences``), in spoken order.

    Each is attributed to its speaker ("Speaker: words"; sentences of one turn share the label).
    """
    parts: list[str] = []
    previous = -1
    for index, sentence in central_sentences([t.text for t in turns], SUMMARY_CHARS, MIN_SUMMARY_WORDS):
        speaker = turns[index].speaker
        parts.append(sentence.text if index == previous or not speaker else f"{speaker}: {sentence.text}")
        previous = index
    return clip(" ".join(parts), SUMMARY_CHARS)


# --- documents: sections by headings ------------------------------------------------------


def segment_by_headings(document: ClaimedDocument) -> list[Segment]:
    from rag.parsing.markdown import has_headings, parse_markdown

    body = document.body
    sections = parse_markdown(body, document.title or "").sections if has_headings(body) else []
    spans = [(s.start_char, s.end_char, s.heading_path) for s in sections] or [(0, len(body), ())]
    segments: list[Segment] = []
    for start, end, path in spans:
        text = body[start:end]
        if not text.strip():
            continue
        # A section starts with its heading line: the summary is the lead of what follows it.
        content_start = start + (len(text.split("\n", 1)[0]) + 1 if path else 0)
        lead = [s.text for s in sentences(body[min(content_start, end) : end])][:2]
        title = path[-1] if path else (document.title or "Document")
        stripped_start = start + (len(text) - len(text.lstrip()))
        stripped_end = start + len(text.rstrip())
        segments.append(
            Segment(
                index=len(segments),
                title=clip(title, 200),
                summary=clip(" ".join(lead) or title, SUMMARY_CHARS),
                start_char=stripped_start,
                end_char=stripped_end,
                method="headings",
                heading_path=tuple(path),
            )
        )
    return segments


# --- LLM ------------------------------------------------------------------------------------


class ProposedSegment(BaseModel):
    start_turn: int = Field(description="number of the segment's first turn")
    end_turn: int = Field(description="number of the segment's last turn (inclusive)")
    title: str = Field(description="a short topic title, at most 8 words")
    summary: str = Field(description="one to three sentences: what was discussed and concluded")


class ProposedSegmentation(BaseModel):
    segments: list[ProposedSegment]


SEGMENT_SYSTEM_PROMPT = (
    "You split meeting transcripts into topic segments. The user gives numbered turns '[n] Speaker: text'. "
    "Return segments in order that together cover every turn exactly once; a new segment starts where the "
    "discussion moves to a different topic. Prefer few, substantial segments (usually 3 to 15 turns or more). "
    "Titles name the topic; summaries state what was discussed and decided, using only the transcript."
)


def segment_with_llm(document: ClaimedDocument, settings: Settings) -> list[Segment]:
    from rag.llm import numbered_units, structured_completion

    turns = document.turns
    starts: dict[int, tuple[str, str]] = {}  # first turn of each segment -> (title, summary)
    for window_start in range(0, len(turns), LLM_WINDOW_TURNS):
        window = turns[window_start : window_start + LLM_WINDOW_TURNS]
        last = window_start + len(window) - 1
        answer = structured_completion(
            settings,
            system=SEGMENT_SYSTEM_PROMPT,
            user=f"Meeting: {document.title or 'untitled'}\n\n"
            + numbered_units([f"{t.speaker}: {t.text}" for t in window], window_start),
            response_model=ProposedSegmentation,
        )
        valid = sorted(
            (p for p in answer.segments if window_start <= p.start_turn <= p.end_turn <= last and p.title.strip()),
            key=lambda p: p.start_turn,
        )
        if not valid:
            raise LLMOutputError(f"no usable segment for turns {window_start}-{last} in {len(answer.segments)} proposed")
        # Gaps and overlaps are closed by the next segment's start; each window starts a segment.
        for position, proposed in enumerate(valid):
            starts[window_start if position == 0 else proposed.start_turn] = (proposed.title, proposed.summary)
    return [
        turn_segment(document, index, first, last, *starts[first], "llm")
        for index, (first, last) in enumerate(ranges_from_starts(list(starts), len(turns)))
    ]
