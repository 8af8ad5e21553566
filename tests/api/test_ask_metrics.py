"""rag.api.ask_metrics: each answer's metrics are reported once, by the handler, after the response."""

from __future__ import annotations

from rag.api.ask_metrics import record_answer, take_answer_metrics

REPLY = {
    "usage": {"input_tokens": 200, "output_tokens": 100},
    "tool_calls": [{"name": "search"}],
    "citations": [{"n": 1}, {"n": 2}],
    "took_ms": 812.5,
    "mode": "extractive",
    "degraded": "model_unavailable",
}


def test_an_answers_metrics_are_taken_once():
    take_answer_metrics()  # whatever an earlier test left
    record_answer(REPLY)

    assert take_answer_metrics() == [
        ("AskInputTokens", "Count", 200), ("AskOutputTokens", "Count", 100), ("AskToolCalls", "Count", 1),
        ("AskCitations", "Count", 2), ("AskLatency", "Milliseconds", 812.5), ("AskExtractiveAnswers", "Count", 1),
        ("AskDegradedAnswers", "Count", 1),
    ]  # fmt: skip
    assert take_answer_metrics() == []
