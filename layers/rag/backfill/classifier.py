"""A sentence classifier of item kinds (decision, risk, task, opportunity): text and cue features, a linear model.

The features depend on the sentence's words only, never on an embedding model, so one weights file serves every
embedding provider, and inference is plain Python (the Lambda layer has no numpy). The weights
(``sentence_model.json``) are trained by ``bench/train_extractor.py`` (``make train-extractor``) on the labelled
sentences of ``bench/labels``: one logistic regression per kind (one-vs-rest; a sentence may state two kinds),
with a threshold per kind chosen for precision and written into the file (above 1 when the kind never reached its
precision floor in cross-validation: the classifier then leaves that kind to the patterns of rag.backfill.rules).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

__all__ = ["DEFAULT_MODEL", "SentenceModel", "classify_sentence", "features", "kinds_of", "load_model"]

DEFAULT_MODEL = Path(__file__).with_name("sentence_model.json")
FEATURE_SET = "words-cues-context-v3"  # bump when ``features`` changes: a weights file names the features it was trained on

# Transcripts write "I 'll", "let 's", curly quotes: one spelling so "i'll" is one token.
_APOSTROPHE = re.compile(r"\s*[’'](?=[a-z])", re.I)
_MARKUP = re.compile(r"\{\w+\}|<[^>]{1,40}>")
_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_NUMBER = re.compile(r"^\d")

_CUES: dict[str, re.Pattern[str]] = {
    name: re.compile(pattern, re.I)
    for name, pattern in {
        # a person addressed by name, then asked ("Dana, can you ...", "Dana, please ...")
        "addressed_request": r"^(?:\w+\s+){0,2}?[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?,\s+(?:please|can|could|would|will)\b",
        "request": r"\b(?:can|could|would|will)\s+you\b|\bplease\b",
        "first_person_future": r"\bI(?:'ll|\s+will|'m\s+(?:going\s+to|gonna)|\s+am\s+going\s+to)\b",
        "we_future": r"\bwe(?:'ll|\s+will|'re\s+(?:going\s+to|gonna)|\s+are\s+going\s+to)\b",
        "obligation": r"\b(?:need\s+to|needs\s+to|have\s+to|has\s+to|must|should|got\s+to)\b",
        "possibility": r"\b(?:could|might|may)\b",
        "conditional": r"^(?:\w+\s+){0,3}?(?:if|unless|when)\b|\bif\s+(?:we|they|you|it|the|someone|this|that)\b",
        "consequence": r"\b(?:then|would|will|could|might)\b.{0,40}\b(?:fail|break|slip|delay|lose|miss|cost|close|drop)",
        "negation": r"\b(?:not|no|never|n't)\b|n't\b",
        "decide_word": r"\b(?:decid\w*|decision|agreed?|settled?|final(?:ly)?|go(?:ing)?\s+with|stick\s+with)\b",
        "deferral": r"\blet's\s+not\b|\b(?:later|next\s+time|get\s+back\s+to|park)\b",
        "risk_word": r"\b(?:risks?|concern\w*|worr\w*|danger\w*|problem\w*|issues?|threat\w*|afraid)\b",
        "opportunity_word": r"\b(?:opportunit\w*|market\w*|sell\w*|cheaper|sav(?:e|es|ing|ings)|profit\w*|demand)\b",
        "deadline": r"\b(?:by|before|until|due)\s+(?:the\s+)?(?:end\s+of\s+|next\s+)?"
        r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|tonight|week|month|\d)",
        "weekday_or_month": r"\b(?:monday|tuesday|wednesday|thursday|friday|january|february|march|april|may\s+\d"
        r"|june|july|august|september|october|november|december|next\s+week|tomorrow)\b",
        "money_or_number": r"[$€£]\s?\d|\b\d+(?:[.,]\d+)?\s*(?:%|percent|euros?|dollars?|pounds?|million|billion)",
        # a plan stated as settled, in the present ("we move the launch to ...", "we're launching on ...")
        "settled_plan": r"^(?:(?:then|so|and|but|yeah|okay|ok|right|fine),?\s+)*we(?:'re)?\s+(?:now\s+|just\s+)?"
        r"(?:ship|move|keep|stay|drop|use|close|open|lower|raise|switch|launch|cap|freeze|cancel|postpone|skip|adopt|"
        r"approve|reject|pick|choose|go\s+(?:with|for|back\s+to|ahead)|\w+ing\s+(?:with|to|on|the))\b",
        "fixed_constraint": r"\b(?:is|are)\s+(?:now\s+)?(?:capped|adopted|approved|frozen|locked|confirmed|final|"
        r"postponed|cancell?ed|scrapped|carried|ratified)\b|,\s+not\s+\w+|\b(?:stays?|moves?)\s+(?:open|closed|to)\b",
        "conditional_harm": r"^(?:\w+,?\s+){0,2}?(?:if|unless)\s+(?!you\b)[^,]{3,160},.*\b(?:can't|cannot|won't|"
        r"couldn't|wouldn't|brick|break|fail|lose|lost|miss|late|delay|short|over|hole|slip|crash|stuck|run\s+out|"
        r"paying|damage|close|stop|drop|double|exposed|problem|trouble|behind|worse|no\s+(?:way|longer|fallback))",
        "vague_alarm": r"^(?:\w+,?\s+){0,2}?(?:that|this|it|everything)(?:'s|\s+is)\s+(?:\w+\s+){0,2}"
        r"(?:risk|concern|worry|problem|issue)\b[^,]{0,20}$",
        "monitoring": r"\bkeep\s+(?:an\s+eye|track|(?:it|that|this)\s+in\s+mind)\b",
    }.items()
}
_AGREEMENT = re.compile(
    r"^(?:yeah|yes|yep|okay|ok|sure|agreed|great|fine|right|perfect|good|will\s+do|deal|sounds\s+good|fair\s+enough)\b", re.I
)

# A short acceptance before a sentence ("Two feels tight, but okay, I can live with two." / "I'm happy with that."):
# what follows, from the chair, is often the settled version.
_ACCEPTANCE = re.compile(
    r"\b(?:okay|ok|fine|agreed|good|great|happy\s+with|live\s+with|works\s+for|fair|makes\s+sense|no\s+objection|"
    r"sounds\s+(?:good|fine|right)|all\s+right)\b",
    re.I,
)


def _accepts(sentence: str | None, most_words: int) -> bool:
    if sentence is None:
        return False
    plain = _APOSTROPHE.sub("'", sentence).strip()
    return not plain.endswith("?") and len(plain.split()) <= most_words and _ACCEPTANCE.search(plain) is not None


def _length_bucket(words: int) -> str:
    for limit in (2, 4, 8, 15, 25, 40):
        if words <= limit:
            return f"len:{limit}"
    return "len:more"


def features(
    text: str,
    first_in_turn: bool = True,
    last_in_turn: bool = True,
    previous: str | None = None,
    following: str | None = None,
) -> dict[str, float]:
    """The sentence's features by name (binary): words, word pairs, the first words, cues, length, place in its turn,
    and its neighbours: the sentence before (a question it answers) and after (agreement, a question, across turns)."""
    plain = _MARKUP.sub(" markup ", _APOSTROPHE.sub("'", text))
    tokens = ["#" if _NUMBER.match(t) else t for t in _TOKEN.findall(plain.lower())]
    found: dict[str, float] = {"bias_text": 1.0}
    for token in tokens:
        found[f"w:{token}"] = 1.0
    for left, right in zip(tokens, tokens[1:], strict=False):
        found[f"b:{left} {right}"] = 1.0
    for position, token in enumerate(tokens[:2]):
        found[f"start{position}:{token}"] = 1.0
    stripped = plain.strip()
    for name, pattern in _CUES.items():
        if pattern.search(stripped):
            found[f"cue:{name}"] = 1.0
    if stripped.endswith("?"):
        found["question"] = 1.0
    found[_length_bucket(len(tokens))] = 1.0
    found[f"turn:{'first' if first_in_turn else 'inner'}-{'last' if last_in_turn else 'inner'}"] = 1.0
    if previous is not None and first_in_turn and previous.strip().endswith("?"):
        found["ctx:answers_question"] = 1.0
    if _accepts(previous, 12 if first_in_turn else 6):  # another's acceptance, or the speaker's own "Okay."
        found[f"ctx:after_acceptance_{'other' if first_in_turn else 'own'}"] = 1.0
    if following is not None and last_in_turn:
        reply = _APOSTROPHE.sub("'", following).strip()
        if _AGREEMENT.search(reply) and len(reply.split()) <= 6:
            found["ctx:then_agreement"] = 1.0
        elif reply.endswith("?"):
            found["ctx:then_question"] = 1.0
    return found


@dataclass(frozen=True)
class SentenceModel:
    """One logistic regression per kind over named features; ``thresholds`` are chosen for precision."""

    kinds: tuple[str, ...]
    intercepts: tuple[float, ...]
    weights: Mapping[str, tuple[float, ...]]  # feature name -> a weight per kind, in ``kinds`` order
    thresholds: Mapping[str, float]

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> SentenceModel:
        if data.get("feature_set") != FEATURE_SET:
            raise ValueError(f"weights for feature set {data.get('feature_set')!r}, this code computes {FEATURE_SET!r}")
        kinds = tuple(str(k) for k in data["kinds"])  # type: ignore[attr-defined]
        intercepts = tuple(float(b) for b in data["intercepts"])  # type: ignore[attr-defined]
        raw_weights: Mapping[str, list[float]] = data["weights"]  # type: ignore[assignment]
        weights = {name: tuple(float(w) for w in row) for name, row in raw_weights.items()}
        thresholds: Mapping[str, float] = {str(k): float(v) for k, v in data["thresholds"].items()}  # type: ignore[attr-defined]
        if len(intercepts) != len(kinds) or any(len(row) != len(kinds) for row in weights.values()):
            raise ValueError("weights file: every row needs one weight per kind")
        if set(thresholds) != set(kinds):
            raise ValueError("weights file: one threshold per kind")
        return cls(kinds, intercepts, weights, thresholds)

    def probabilities(self, named: Mapping[str, float]) -> dict[str, float]:
        scores = list(self.intercepts)
        for name, value in named.items():
            row = self.weights.get(name)
            if row is not None:
                for index, weight in enumerate(row):
                    scores[index] += weight * value
        return {kind: _sigmoid(score) for kind, score in zip(self.kinds, scores, strict=True)}


def _sigmoid(score: float) -> float:
    if score >= 0:
        return 1.0 / (1.0 + math.exp(-score))
    exp = math.exp(score)
    return exp / (1.0 + exp)


def load_model(path: Path | None = None) -> SentenceModel:
    """The model of a weights file (by default the shipped one, read once)."""
    return _load(path or DEFAULT_MODEL)


@lru_cache(maxsize=4)
def _load(path: Path) -> SentenceModel:
    return SentenceModel.from_json(json.loads(path.read_text(encoding="utf-8")))


def classify_sentence(
    text: str,
    speaker: str | None = None,
    *,
    first_in_turn: bool = True,
    last_in_turn: bool = True,
    previous: str | None = None,
    following: str | None = None,
    model: SentenceModel | None = None,
) -> dict[str, float]:
    """The probability of each kind for one sentence. ``speaker`` is accepted for the callers' symmetry with the
    rules; the features use the text, its place in the turn and its neighbours (``previous`` / ``following``: the
    sentences before and after it), never the speaker's name (speaker labels differ between sources)."""
    del speaker
    model = model or load_model()
    return model.probabilities(features(text, first_in_turn, last_in_turn, previous, following))


def kinds_of(probabilities: Mapping[str, float], model: SentenceModel | None = None) -> list[str]:
    """The kinds whose probability reaches the model's threshold, most probable first."""
    model = model or load_model()
    chosen = [kind for kind, p in probabilities.items() if p >= model.thresholds[kind]]
    return sorted(chosen, key=lambda kind: -probabilities[kind])
