"""An answer without a chat model: the most relevant sentences of the best passages, cited.

The question is searched (hybrid, every knowledge type but segments) within the request's
scope; the sentences of the passages that are evidence (``rag.ask.evidence``) are embedded with the
search's own model and the closest ones to the question (of near-equals, the later meeting's and the one holding
the kind of answer asked for) are quoted with their speaker and the next sentence of their turn, each
cited down to its own turn and character range: at most ``ask_extractive_sentences``, at most
two from one passage, never a question or a sentence under five words. A quoted task or risk is
followed by what later meetings said of it (``rag.ask.item_changes``). No evidence: the
answer says so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from rag.ask.answer_types import asked_for, share_held
from rag.ask.citations import Passage
from rag.ask.item_changes import change_line, later_changes
from rag.ask.search_tools import search_hits
from rag.ask.sentences import sentence_spans
from rag.ask.standing import TIMED_TYPES, chain, decision_history, label, replaced_on, standing
from rag.ask.tool_context import ToolContext
from rag.ask.tool_passages import hit_passage, item_passage
from rag.knowledge import KINDS
from rag.validation import MAX_QUERY_CHARS

if TYPE_CHECKING:
    from rag.search.engine import Hit

QUOTED_TYPES = tuple(kind.name for kind in KINDS if kind.quotable)  # not segments: their summary is no one's words
NOT_FOUND = "I found nothing in the meetings and documents you can access that answers this question."
CANDIDATE_HITS = 6
MAX_CANDIDATE_SENTENCES = 60
MAX_QUOTE_WORDS = 80  # a sentence is quoted with the next one of its turn (the rest of the thought) within this
MIN_WORDS = 5  # shorter ones ("Noted as a risk.") say little on their own
TIMED_TABLES = {kind.name: kind.table for kind in KINDS if kind.name in TIMED_TYPES}  # the kinds later meetings change
MIN_SENTENCE_SIMILARITY = 0.3  # past the first quote, a sentence further from the question adds nothing
_SPEAKER = re.compile(r"^\s*(?:[-*]\s+)?([^:\n]{1,60}):\s")  # "Dana:", or a notes bullet "- Dana:"


@dataclass(frozen=True)
class Sentence:
    text: str
    speaker: str | None
    passage: Passage
    hit_rank: int
    item_id: int | None = None  # an extracted item's row (its status is in ``metadata``)
    metadata: dict[str, Any] | None = None
    quote: str | None = None  # with the next sentence of its turn (the rest of the thought), as quoted
    quote_end: int | None = None  # where that quote ends


def _turn_at(turns: list[Any] | None, offset: int) -> int | None:
    if not turns:
        return None
    for i, turn in enumerate(turns):
        if turn[1] <= offset < max(turn[2], turn[1] + 1):
            return i
    return None


def sentences_of(type_name: str, hit: Hit, rank: int, turns: list[Any] | None) -> list[Sentence]:
    """The sentences of a hit, each with its own character range (and turn, for transcripts)."""
    base = hit_passage(type_name, hit)
    if type_name != "chunk":  # an extracted item or a summary: cited whole, as one sentence
        text = hit.content.strip()
        if len(text.split()) < MIN_WORDS or text.endswith("?"):
            return []
        return [Sentence(text, None, base, rank, hit.id, hit.metadata)]
    found = []
    line_start = 0
    for line in hit.content.split("\n"):
        speaker_match = _SPEAKER.match(line)
        speaker = speaker_match.group(1).strip() if speaker_match else None
        body_from = speaker_match.end() if speaker_match else 0
        spans = sentence_spans(line, body_from)
        for position, (sentence_start, sentence_end) in enumerate(spans):
            text = line[sentence_start:sentence_end]
            following = spans[position + 1] if position + 1 < len(spans) else None
            if len(text.split()) < MIN_WORDS or text.endswith("?"):
                continue  # a question in a meeting is close to the question asked, but it is not an answer
            start = hit.start_char + line_start + sentence_start
            end = start + len(text)
            quote, quote_end = text, end
            if following and len(line[sentence_start : following[1]].split()) <= MAX_QUOTE_WORDS:
                quote, quote_end = line[sentence_start : following[1]], hit.start_char + line_start + following[1]
            turn = _turn_at(turns, start)
            if turn is not None:
                speaker = speaker or (turns[turn][0] if turns and turns[turn][0] else None)
            passage = replace(
                base, start_char=start, end_char=end, start_turn=turn if turn is not None else base.start_turn,
                end_turn=turn if turn is not None else base.end_turn,
                speakers=(speaker,) if speaker else base.speakers,
            )  # fmt: skip
            found.append(Sentence(text, speaker, passage, rank, quote=quote, quote_end=quote_end))
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
    kinds = asked_for(question)
    if kinds:  # "when ...?": a sentence with a date in it first, among near-equals (rag.ask.answer_types)
        bonus = ctx.settings.ask.answer_type_bonus
        scores = [score + bonus * share_held(s.text, kinds, s.speaker) for score, s in zip(scores, candidates)]
    recency = ctx.settings.ask.recency_bonus  # a later meeting says how things stand now
    scores = [score + recency * late for score, late in zip(scores, _lateness(candidates))]
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
        if len(chosen) >= 2 * ctx.settings.ask.extractive_sentences:  # spares: a decision's history may take some
            break
    return _quoted(ctx, [candidates[i] for i in chosen], ctx.settings.ask.extractive_sentences), len(hits)


def _quoted(ctx: ToolContext, chosen: list[Sentence], quotes: int) -> str:
    """The chosen sentences as cited lines, each with who said it, what it is now and when.

    A sentence of a decision that was replaced or replaced another (the decision itself, or the
    transcript sentence it was extracted from) is not quoted on its own: the answer leads with the
    current decision of its chain and lists the ones it replaced, latest first, each with its date.
    """
    items_of = _items_of(ctx, chosen)
    decision_of = items_of["decision"]
    history = decision_history(ctx.conn, ctx.tenant_id, decision_of.values())
    chains: dict[int, list[Any]] = {}  # current decision id -> [current, *replaced], in order of first appearance
    rest: list[Sentence] = []
    for sentence in chosen:
        found = chain(history, decision_of[id(sentence)]) if id(sentence) in decision_of else None
        if found is None or not found[1]:
            rest.append(sentence)
        else:
            chains.setdefault(found[0].id, [found[0], *found[1]])

    def line(passage: Passage, text: str, state: str | None, who: str | None = None, metadata: Any = None) -> str:
        n = ctx.citations.add(passage)
        if passage.type == "chunk":  # a transcript's sentence: its speaker and day
            day = passage.meeting_date.isoformat() if passage.meeting_date else None
            head = f"{who}{', ' + day if day else ''}: " if who else (f"{day}: " if day else "")
        else:
            who_said = passage.speakers or _named(metadata)
            owner = (metadata or {}).get("assignee") if passage.type == "task" else None
            if owner and owner not in who_said:  # handed over, or assigned by someone else: who owes it now
                state = f"{state}, owner {owner}" if state else f"owner {owner}"
            head = label(passage.type, who_said, state, passage.meeting_date)
        return f'- {head}"{ctx.redact(text)}" [{n}]'

    lines: list[str] = []
    for current, *replaced in chains.values():
        day = current.meeting_date.isoformat() if current.meeting_date else "the latest meeting"
        lines.append(f"The current decision ({day}):")
        lines.append(line(item_passage(current.item, "decision"), current.item["description"], "current"))
        lines.append("It replaced:")
        for old in replaced:
            state = standing("decision", {"status": "superseded"}, replaced_on=replaced_on(history, old.id))
            lines.append(line(item_passage(old.item, "decision"), old.item["description"], state))
    budget = max(quotes - len(chains), 0)  # each decision's history stands for one quote
    if rest and budget:
        lines.append("Other relevant passages:" if chains else "The most relevant passages:")
    # What a later meeting said of a quoted task or risk (closed it, reported it done, ...), after its first quote.
    changed_items = [(kind, items_of[kind][id(s)]) for s in rest for kind in ("risk", "task") if id(s) in items_of[kind]]
    changes = later_changes(ctx, changed_items)
    shown: list[tuple[str, int, int]] = []  # what the answer quotes already: a transcript sentence there is not repeated
    for sentence in rest:
        p = sentence.passage
        if budget == 0:
            break
        if p.type == "chunk" and any(doc == p.document_id and start <= p.start_char < end for doc, start, end in shown):
            continue  # the next sentence of an earlier quote, or a change statement shown with its item
        budget -= 1
        state = standing(p.type, sentence.metadata, replaced_on=replaced_on(history, decision_of.get(id(sentence), -1)))
        passage = replace(p, end_char=sentence.quote_end or p.end_char)
        lines.append(line(passage, sentence.quote or sentence.text, state, sentence.speaker, sentence.metadata))
        if p.type == "chunk":
            shown.append((p.document_id, p.start_char, passage.end_char))
        for kind in ("risk", "task"):
            for statement in changes.pop((kind, items_of[kind].get(id(sentence), -1)), []):
                lines.append(change_line(ctx, statement))
                shown.append((statement["document_id"], statement["start_char"], statement["end_char"]))
    return "\n".join(lines)


def _named(metadata: dict[str, Any] | None) -> tuple[str, ...]:
    """Who an item without a speaker (a notes line) names: its assignee or owner."""
    name = (metadata or {}).get("assignee") or (metadata or {}).get("owner")
    return (str(name),) if name else ()


def _items_of(ctx: ToolContext, chosen: list[Sentence]) -> dict[str, dict[int, int]]:
    """Each timed kind -> the item of that kind each chosen sentence states (keyed by ``id(sentence)``): an item's
    own, or the one extracted from its span."""
    documents = sorted({s.passage.document_id for s in chosen})
    spans = ctx.conn.execute(
        " UNION ALL ".join(
            f"""SELECT '{kind}', id, document_id::text, start_char, end_char,
                       lower(description || ' ' || coalesce(evidence, '')) FROM {table}
                 WHERE tenant_id = %(tenant)s AND document_id = ANY(%(documents)s::uuid[])"""
            for kind, table in TIMED_TABLES.items()
        ),  # noqa: S608 - constant table names
        {"tenant": ctx.tenant_id, "documents": documents},
    ).fetchall()
    found: dict[str, dict[int, int]] = {kind: {} for kind in TIMED_TABLES}
    for sentence in chosen:
        p = sentence.passage
        said = " ".join(sentence.text.lower().lstrip("-*• ").split())  # a notes bullet states its item too
        if p.type in found and sentence.item_id is not None:
            found[p.type][id(sentence)] = sentence.item_id
        elif p.type == "chunk":  # a sentence of the turn an item came from, saying the item (not its neighbours)
            for kind, item, doc, start, end, words in spans:
                if doc == p.document_id and start < p.end_char and p.start_char < end and said in " ".join(words.split()):
                    found[kind].setdefault(id(sentence), item)
    return found


def _lateness(candidates: Sequence[Sentence]) -> list[float]:
    """Each sentence's meeting date as a fraction of the candidates' span: 0 the earliest (or undated), 1 the latest."""
    days = [c.passage.meeting_date for c in candidates]
    known = [d for d in days if d]
    if not known or max(known) == min(known):
        return [0.0] * len(candidates)
    first, span = min(known), (max(known) - min(known)).days
    return [(d - first).days / span if d else 0.0 for d in days]


def _norm(vector: Sequence[float]) -> float:
    return float(sum(x * x for x in vector) ** 0.5)
