"""rag.api.ask_metrics: each answer's metrics are reported once, by the handler, after the response."""

from __future__ import annotations

from rag.api.ask_metrics import record_answer, take_answer_metrics
from rag.ask.citations import Passage
from rag.ask.types import Answer, Cited, ToolCall, Usage

PASSAGE = Passage("chunk", "00000000-0000-0000-0000-000000000001", "s3://b/k", None, 0, 10)
REPLY = Answer(
    text="The battery is rechargeable [1][2].",
    mode="extractive",
    citations=(Cited(1, PASSAGE), Cited(2, PASSAGE)),
    tool_calls=(ToolCall("search", {"query": "battery"}, 2),),
    usage=Usage(200, 100),
    took_ms=812.5,
    degraded="model_unavailable",
)


def test_an_answers_metrics_are_taken_once():
    take_answer_metrics()  # whatever an earlier test left
    record_answer(REPLY)

    assert take_answer_metrics() == [
        ("AskInputTokens", "Count", 200), ("AskOutputTokens", "Count", 100), ("AskToolCalls", "Count", 1),
        ("AskCitations", "Count", 2), ("AskLatency", "Milliseconds", 812.5), ("AskExtractiveAnswers", "Count", 1),
        ("AskDegradedAnswers", "Count", 1),
    ]  # fmt: skip
    assert take_answer_metrics() == []
