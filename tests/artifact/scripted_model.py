"""An OpenAI-compatible model for a whole deployment: embeddings, the backfill's structured outputs, /v1/ask's tools.

tests/embedding/fake_openai.py answers chat completions from one queue, in order; a backfill batch asks about
several documents in an order the database chooses, so here a structured-output request is answered by what it
asks about: the recorded answers for the scanner-rollout meeting (tests/fixtures/backfill/llm/), and for any
other document one segment over all its turns and nothing extracted. Tool-calling requests (/v1/ask) take the
queued conversation (``chat_responses``), as in FakeOpenAI. ``converse_answer`` gives the same answers to Bedrock's
Converse requests (tests/artifact/fake_bedrock.py's ``converse_responder``), as the called tool's input.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

from tests.embedding.fake_openai import FakeOpenAI

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "backfill" / "llm"
SCANNER_MEETING_MARK = "Leeds warehouse"  # words of tests/fixtures/backfill/transcripts/scanner_rollout_sync.txt
# The recorded extraction of each recorded segment, by the segment's title (the extract prompt names it).
SCANNER_EXTRACTIONS = {
    "Segment: Leeds warehouse scanner rollout": "extract_scanner_rollout_sync_0.json",
    "Segment: Rotterdam trade show booth": "extract_scanner_rollout_sync_1.json",
}
NUMBERED_LINE = re.compile(r"^\[(\d+)\] ", re.MULTILINE)


def recorded(name: str) -> Any:
    return json.loads((RECORDED / name).read_text())


class ScriptedModel(FakeOpenAI):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        model = self

        class Handler(self.server.RequestHandlerClass):  # type: ignore[name-defined,misc]
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                self.rfile = io.BytesIO(raw)  # FakeOpenAI's handler reads the body again
                if self.path == "/v1/chat/completions" and (answer := model.structured_answer(json.loads(raw))) is not None:
                    model.chat_responses.insert(0, answer)
                super().do_POST()

        self.server.RequestHandlerClass = Handler

    def structured_answer(self, body: dict[str, Any]) -> Any:
        """The answer to a structured-output request (None for others: they take the queued conversation)."""
        schema = (body.get("response_format") or {}).get("json_schema", {}).get("name")
        if schema is None:
            return None
        return answer_for(schema, next(m["content"] for m in body["messages"] if m["role"] == "user"))


def converse_answer(body: dict[str, Any]) -> dict[str, Any]:
    """A Converse request's answer: the tool it must call, called with what ``answer_for`` answers."""
    from tests.artifact.fake_bedrock import FakeBedrock

    schema = body["toolConfig"]["toolChoice"]["tool"]["name"]
    return FakeBedrock.tool_reply(schema, answer_for(schema, body["messages"][0]["content"][0]["text"]))


def answer_for(schema: str, user: str) -> Any:
    """The answer to the structured output ``schema`` for the prompt ``user``."""
    numbers = [int(n) for n in NUMBERED_LINE.findall(user)]
    if schema == "ProposedSegmentation":
        if SCANNER_MEETING_MARK in user:
            return recorded("segment_scanner_rollout_sync.json")
        return {"segments": [{"start_turn": min(numbers), "end_turn": max(numbers), "title": "The whole meeting",
                              "summary": "Everything that was said."}]}  # fmt: skip
    if schema == "ProposedKnowledge":
        recording = next((name for title, name in SCANNER_EXTRACTIONS.items() if title in user), None)
        if recording is not None:
            return recorded(recording)
        return {"decisions": [], "risks": [], "opportunities": [], "tasks": [], "changes": []}
    raise AssertionError(f"ScriptedModel: no answer for the structured output {schema!r}")
