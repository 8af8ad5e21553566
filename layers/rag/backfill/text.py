"""Small text helpers of the offline stages: sentences with offsets, keywords, extractive summaries."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from rag.backfill.cues import FILLERS

SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])|\n\s*\n")
WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")
MARKUP = re.compile(r"\{\w+\}|<[^>]{1,40}>")  # transcript annotations ({vocalsound}, {gap}) and tags

# Function words and meeting fillers: never a topic keyword.
STOPWORDS = frozenset(
    """a about above after again against all also am an and any are aren't as at be because been before being below
    between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each few for
    from further get gets got had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself
    him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself just let let's like me more
    most mustn't my myself no nor not now of off on once only or other ought our ours ourselves out over own really
    same shan't she she'd she'll she's should shouldn't so some such than that that's the their theirs them themselves
    then there there's these they they'd they'll they're they've this those through to too under until up very was
    wasn't we we'd we'll we're we've were weren't what what's when when's where where's which while who who's whom why
    why's will with won't would wouldn't you you'd you'll you're you've your yours yourself yourselves yeah yes okay ok
    um uh hmm mm right well oh gonna wanna think know mean sort kind thing things actually basically maybe probably
    something anything everything one two three four five much many lot lots also still even go going get got make
    made say said see need want yep sure good great fine next first last bit way time today week please thanks thank
    will would shall might must done do does take put use used""".split()
)


@dataclass(frozen=True)
class Sentence:
    start: int  # offsets into the text the sentence was cut from
    end: int
    text: str


def sentences(text: str, offset: int = 0) -> Iterator[Sentence]:
    """Sentences of ``text`` with their offsets (plus ``offset``), trimmed of surrounding space."""
    start = 0
    for match in SENTENCE_END.finditer(text):
        yield from _sentence(text, start, match.start(), offset)
        start = match.end()
    yield from _sentence(text, start, len(text), offset)


def _sentence(text: str, start: int, end: int, offset: int) -> Iterator[Sentence]:
    piece = text[start:end]
    stripped = piece.strip()
    if stripped:
        lead = len(piece) - len(piece.lstrip())
        yield Sentence(offset + start + lead, offset + start + lead + len(stripped), stripped)


def content_words(text: str) -> list[str]:
    words = (m.group().lower().strip("'-") for m in WORD.finditer(MARKUP.sub(" ", text)))
    return [w for w in words if len(w) > 2 and w not in STOPWORDS]


def keyword_titles(texts: Sequence[str], per_title: int = 3) -> list[str]:
    """A title per text from its most distinctive words (tf x idf among ``texts``)."""
    counts = [Counter(content_words(text)) for text in texts]
    df = Counter(word for count in counts for word in count)
    titles = []
    for count in counts:
        scored = sorted(count, key=lambda w: (-count[w] * (1.0 + math.log(len(texts) / df[w])), w))
        words = scored[:per_title]
        titles.append(", ".join(words).capitalize() if words else "")
    return titles


def clip(text: str, limit: int) -> str:
    """``text`` cut at a word boundary to at most ``limit`` characters (an ellipsis marks the cut)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return text[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"


def central_sentences(units: Sequence[str], limit: int, min_words: int = 6) -> list[tuple[int, Sentence]]:
    """The sentences of ``units`` (a segment's turns) closest to the segment's centroid, in spoken order.

    Centroid-based extractive summarizing (Radev et al., 2004): each sentence is a tf-idf
    vector of its content words (idf over the sentences of the segment), the centroid
    their sum, and a sentence's centrality its cosine to the centroid. The most central
    sentences are taken while they fit ``limit`` characters, skipping one that repeats
    most of the words of one already taken. A sentence of fewer than ``min_words`` words
    ("Okay, good.") never summarizes a topic; if there is no other, the longest ones serve.
    Returns (unit index, sentence) pairs.
    """
    found = [(i, s) for i, unit in enumerate(units) for s in sentences(unit)]
    if not found:
        return []
    candidates = [pair for pair in found if len(pair[1].text.split()) >= min_words]
    if not candidates:
        candidates = sorted(found, key=lambda pair: -len(pair[1].text))[:1]
    counts = [Counter(content_words(s.text)) for _, s in candidates]
    df = Counter(word for count in counts for word in count)
    n = len(counts)
    vectors = [{w: c * (1.0 + math.log(n / df[w])) for w, c in count.items()} for count in counts]
    centroid: Counter[str] = Counter()
    for vector in vectors:
        centroid.update(vector)
    centre_norm = math.sqrt(sum(v * v for v in centroid.values())) or 1.0

    def centrality(vector: dict[str, float]) -> float:
        norm = math.sqrt(sum(v * v for v in vector.values())) or 1.0
        return sum(v * centroid[w] for w, v in vector.items()) / (norm * centre_norm)

    order = sorted(range(n), key=lambda k: (-centrality(vectors[k]), k))
    chosen: list[int] = []
    used = 0
    for k in order:
        text = candidates[k][1].text
        words = set(counts[k])
        if any(words and len(words & set(counts[j])) > 0.6 * len(words) for j in chosen):
            continue  # says again what a more central sentence said
        if chosen and used + len(text) + 1 > limit:
            continue
        chosen.append(k)
        used += len(text) + 1
        if used >= limit:
            break
    return [candidates[k] for k in sorted(chosen)]


def clean(text: str) -> str:
    """The sentence without leading fillers, first letter capitalized, whitespace normalized."""
    text = " ".join(FILLERS.sub("", text.strip()).split())
    return text[:1].upper() + text[1:] if text else text
