"""The sentence classifier: plain-Python inference equals scikit-learn's, the shipped weights work, no numpy."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import date
from pathlib import Path

import numpy as np
import pytest
from sklearn.feature_extraction import DictVectorizer
from sklearn.linear_model import LogisticRegression

from rag.backfill.classifier import (
    DEFAULT_MODEL,
    SentenceModel,
    classify_sentence,
    features,
    kinds_of,
    load_model,
)
from rag.backfill.rules import classify, extract_by_rules
from rag.backfill.units import Unit

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "backfill" / "sentence_model_tiny.json"
REPO_ROOT = Path(__file__).resolve().parents[2]

SENTENCES = [
    ("We decided to go with the rubber case.", True, True),
    ("If the supplier is late there is a risk to the launch.", True, False),
    ("I'll send you the figures.", False, True),
    ("Is the market big enough?", False, False),
    ("Yeah.", True, True),
]


def sklearn_probabilities(model_file: Path, text: str, first: bool, last: bool) -> dict[str, float]:
    """What scikit-learn's LogisticRegression.predict_proba gives with the file's coefficients."""
    data = json.loads(model_file.read_text())
    names = sorted(data["weights"])
    vectorizer = DictVectorizer().fit([{name: 1.0 for name in names}])
    row = vectorizer.transform([features(text, first, last)])
    probabilities = {}
    for index, kind in enumerate(data["kinds"]):
        regression = LogisticRegression()
        regression.classes_ = np.array([False, True])
        regression.coef_ = np.array([[data["weights"][name][index] for name in vectorizer.get_feature_names_out()]])
        regression.intercept_ = np.array([data["intercepts"][index]])
        probabilities[kind] = float(regression.predict_proba(row)[0, 1])
    return probabilities


@pytest.mark.parametrize(("text", "first", "last"), SENTENCES)
def test_plain_python_inference_equals_scikit_learn(text, first, last):
    model = load_model(TINY)
    got = classify_sentence(text, "Dana", first_in_turn=first, last_in_turn=last, model=model)
    expected = sklearn_probabilities(TINY, text, first, last)
    assert got == pytest.approx(expected, abs=1e-12)


def test_the_tiny_model_separates_its_kinds():
    # The fixture's weights make these sentences clear cases: a check that features fire as named.
    model = load_model(TINY)
    assert kinds_of(classify_sentence("We decided to go with the rubber case.", model=model), model) == ["decision"]
    assert kinds_of(classify_sentence("I'll send you the figures.", model=model), model) == ["task"]
    assert kinds_of(classify_sentence("Is the market big enough?", model=model), model) == []


def test_features_normalise_transcript_spelling():
    # AMI/ICSI transcripts write "I 'll" and "let 's": the same tokens as "I'll" and "let's".
    assert features("I 'll send it .") == features("I'll send it.")
    assert "cue:first_person_future" in features("I 'll send it .")
    assert "w:#" in features("Capped at 1.2 million.")


def test_a_weights_file_of_other_features_is_refused():
    data = json.loads(TINY.read_text())
    with pytest.raises(ValueError, match="feature set"):
        SentenceModel.from_json({**data, "feature_set": "something-else"})
    with pytest.raises(ValueError, match="one weight per kind"):
        SentenceModel.from_json({**data, "weights": {"w:risk": [1.0, 2.0]}})


def test_the_shipped_weights_are_small_and_have_a_threshold_per_kind():
    assert DEFAULT_MODEL.stat().st_size < 1_000_000
    model = load_model()
    assert set(model.thresholds) == {"decision", "risk", "task", "opportunity"}
    # a threshold above 1 is a kind the classifier did not reach its precision floor on: left to the patterns
    assert all(0.0 < threshold < 1.0 or threshold > 1.0 for threshold in model.thresholds.values())


def test_a_kind_whose_threshold_is_above_one_never_comes_out():
    data = json.loads(TINY.read_text())
    model = SentenceModel.from_json({**data, "thresholds": {**data["thresholds"], "task": 1.01}})
    probabilities = classify_sentence("I'll send you the figures.", model=model)
    assert probabilities["task"] > load_model(TINY).thresholds["task"]
    assert kinds_of(probabilities, model) == []


def test_the_neighbouring_sentences_are_features():
    # an answer to a question, then agreement from someone else: how a decision is often settled in a meeting
    named = features("The blue one.", first_in_turn=True, last_in_turn=True, previous="Which color do we ship?",
                     following="Sounds good.")  # fmt: skip
    assert {"ctx:answers_question", "ctx:then_agreement"} <= set(named)
    assert "ctx:then_question" in features("We ship blue.", following="Why blue?")
    # inside a turn the neighbours are the speaker's own sentences: no answer, no agreement
    inner = features("The blue one.", first_in_turn=False, last_in_turn=False, previous="Which color?", following="Yes.")
    assert not {name for name in inner if name.startswith("ctx:")}
    assert "ctx:then_agreement" not in features("We ship blue.", following="Yes, but the sand one is nicer, isn't it?")


def test_an_acceptance_before_a_sentence_is_a_feature():
    # another's "I can live with two", or the speaker's own "Okay.": what the chair says next is often settled
    other = features("Two parallel runs then.", first_in_turn=True, previous="Two feels tight, but okay, I can live with two.")
    own = features("No tolerance for now.", first_in_turn=False, previous="Okay.")
    assert "ctx:after_acceptance_other" in other and "ctx:after_acceptance_own" in own
    assert "ctx:after_acceptance_own" not in features("No tolerance.", first_in_turn=False, previous="Is that okay?")
    long_own = "Okay, I went through all two hundred of them line by line yesterday."
    assert not {n for n in features("No tolerance.", first_in_turn=False, previous=long_own) if n.startswith("ctx:after")}


def test_the_context_changes_the_probability():
    model = load_model(TINY)
    alone = classify_sentence("The blue one.", model=model)
    answered = classify_sentence("The blue one.", previous="Which color?", following="Sounds good.", model=model)
    assert answered["decision"] > alone["decision"]


@pytest.mark.parametrize(
    ("sentence", "kinds"),
    [
        ("I'll write to the committee with the figures next week.", ["task"]),
        ("Could you send us a note on that?", ["task"]),
        ("We have decided that the selling price will be twenty-five euros.", ["decision"]),
        ("So I 'll send you an email with the figures.", ["task"]),  # transcript spelling, which the patterns miss
        ("Can you all hear me?", []),
        ("Yeah.", []),
        ("Okay, thanks everyone.", []),
    ],
)
def test_the_shipped_weights_classify_obvious_sentences(sentence, kinds):
    assert kinds_of(classify_sentence(sentence, "Dana Kim")) == kinds


def test_inference_imports_no_numpy():
    code = (
        "import sys\n"
        "from rag.backfill.classifier import classify_sentence\n"
        "classify_sentence(\"I'll send the draft by Friday.\", 'Dana')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in {'numpy', 'sklearn', 'scipy'}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO_ROOT,
        env={"PYTHONPATH": str(REPO_ROOT / "layers"), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert result.stdout.strip() == "[]"


def test_the_offline_extractor_adds_what_the_classifier_finds_to_what_the_patterns_find():
    # No task pattern fires on the first sentence (transcripts' "I 'll"); the classifier does, and the patterns'
    # task below still counts.
    units = [
        Unit(0, 45, "So I 'll send you an email with the figures.", 4, "Dana Kim"),
        Unit(46, 95, "I'll write to the supplier about it tomorrow.", 5, "Sam Lee"),
    ]
    assert [match.kind for match in classify(units[0].text, "Dana Kim")] == []
    items = extract_by_rules(units, segment_id=None, meeting_date=date(2026, 3, 2))
    assert [(item.kind, item.start_turn) for item in items] == [("task", 4), ("task", 5)]
    assert items[1].fields["assignee"] == "Sam Lee" and items[1].fields["due_date"] == date(2026, 3, 3)
