"""An answer without a chat model: the most relevant sentences of the best passages, cited.

The question is searched (hybrid, every knowledge type but segments) within the request's
scope; the sentences of the passages that are evidence (``rag.ask.evidence``) are embedded with the
search's own model and the closest ones to the question are quoted with their speaker, each
cited down to its own turn and character range: at most ``ask_extractive_sentences``, at most
two from one passage, never a question or a sentence under five words. No evidence: the
answer says so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from rag.api.models import MAX_QUERY_CHARS
from rag.ask.citations import Passage
from rag.ask.sentences import sentence_spans
from rag.ask.tools import ToolContext, _passage_of, search_hits
from rag.knowledge import KINDS

if TYPE_CHECKING:
    from rag.search.engine import Hit

QUOTED_TYPES = tuple(kind.name for kind in KINDS if kind.quotable)  # not segments: their summary is no one's words
NOT_FOUND = "I found nothing in the meetings and documents you can access that answers this question."
CANDIDATE_HITS = 6
MAX_CANDIDATE_SENTENCES = 60
MIN_WORDS = 5  # shorter ones ("Noted as a risk.") say little on their own
MIN_SENTENCE_SIMILARITY = 0.3  # past the first quote, a sentence further from the question adds nothing
_SPEAKER = re.compile(r"^\s*([^:\n]{1,60}):\s")


@dataclass(frozen=True)
class Sentence:
    text: str
    speaker: str | None
    passage: Passage
    hit_rank: int


def _turn_at(turns: list[Any] | None, offset: int) -> int | None:
    if not turns:
        return None
    for i, turn in enumerate(turns):
        if turn[1] <= offset < max(turn[2], turn[1] + 1):
            return i
    return None


def sentences_of(type_name: str, hit: Hit, rank: int, turns: list[Any] | None) -> list[Sentence]:
    """The sentences of a hit, each with its own character range (and turn, for transcripts)."""
    base = _passage_of(type_name, hit)
    if type_name != "chunk":  # an extracted item or a summary: cited whole, as one sentence
        text = hit.content.strip()
        return [Sentence(text, None, base, rank)] if len(text.split()) >= MIN_WORDS and not text.endswith("?") else []
    found = []
    line_start = 0
    for line in hit.content.split("\n"):
        speaker_match = _SPEAKER.match(line)
        speaker = speaker_match.group(1).strip() if speaker_match else None
        body_from = speaker_match.end() if speaker_match else 0
        for sentence_start, sentence_end in sentence_spans(line, body_from):
            text = line[sentence_start:sentence_end]
            if len(text.split()) < MIN_WORDS or text.endswith("?"):
                continue  # a question in a meeting is close to the question asked, but it is not an answer
            start = hit.start_char + line_start + sentence_start
            end = start + len(text)
            turn = _turn_at(turns, start)
            if turn is not None:
                speaker = speaker or (turns[turn][0] if turns and turns[turn][0] else None)
            passage = replace(
                base, start_char=start, end_char=end, start_turn=turn if turn is not None else base.start_turn,
                end_turn=turn if turn is not None else base.end_turn,
                speakers=(speaker,) if speaker else base.speakers,
            )  # fmt: skip
            found.append(Sentence(text, speaker, passage, rank))
        line_start += len(line) + 1
    return found


def extractive_answer(ctx: ToolContext, question: str) -> tuple[str, int]:
    """The answer text (citing ``ctx.citations``) and how many passages were found."""
    query = question[:MAX_QUERY_CHARS]  # a question may be longer than a search allows: its start is searched
    hits = search_hits(ctx, query, list(QUOTED_TYPES), ctx.project_ids, CANDIDATE_HITS)
    if not hits:
        return NOT_FOUND, 0
    documents = list({hit.document_id for _, hit in hits})
    turns: dict[str, list[Any] | None] = dict(
        ctx.conn.execute(
            "SELECT id::text, turns FROM documents WHERE tenant_id = %s AND id = ANY(%s::uuid[])", (ctx.tenant_id, documents)
        ).fetchall()
    )
    candidates = [s for rank, (t, hit) in enumerate(hits) for s in sentences_of(t, hit, rank, turns.get(hit.document_id))]
    candidates = candidates[:MAX_CANDIDATE_SENTENCES]
    if not candidates:
        return NOT_FOUND, 0
    from rag.search.query_text import search_text

    vectors = ctx.embedder.embed([search_text(query) or query] + [s.text for s in candidates])
    query_vector, sentence_vectors = vectors[0], vectors[1:]
    scores = [sum(a * b for a, b in zip(query_vector, v)) / ((_norm(query_vector) * _norm(v)) or 1.0) for v in sentence_vectors]
    order = sorted(range(len(candidates)), key=lambda i: (-scores[i], candidates[i].hit_rank))
    chosen: list[int] = []
    per_hit: dict[int, int] = {}
    seen: set[str] = set()
    for i in order:
        if scores[i] < MIN_SENTENCE_SIMILARITY and chosen:
            break
        said = " ".join(candidates[i].text.lower().split())
        if per_hit.get(candidates[i].hit_rank, 0) >= 2 or said in seen:
            continue  # an extracted item often repeats the sentence it came from: quote it once
        seen.add(said)
        chosen.append(i)
        per_hit[candidates[i].hit_rank] = per_hit.get(candidates[i].hit_rank, 0) + 1
        if len(chosen) >= ctx.settings.ask_extractive_sentences:
            break
    lines = []
    for i in chosen:
        sentence = candidates[i]
        n = ctx.citations.add(sentence.passage)
        who = sentence.speaker or (sentence.passage.type.capitalize() if sentence.passage.type != "chunk" else None)
        day = sentence.passage.meeting_date.isoformat() if sentence.passage.meeting_date else None
        label = f"{who}{', ' + day if day else ''}: " if who else (f"{day}: " if day else "")
        lines.append(f'- {label}"{ctx.redact(sentence.text)}" [{n}]')
    return "The most relevant passages:\n" + "\n".join(lines), len(hits)


def _norm(vector: Sequence[float]) -> float:
    return float(sum(x * x for x in vector) ** 0.5)
