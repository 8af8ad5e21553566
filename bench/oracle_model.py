"""A chat model that answers the extract stage's prompts from the labels: the LLM path measured with perfect answers.

``bench/knowledge_quality.py --oracle`` points the extract stage at an OpenAI-compatible server on
localhost (tests/embedding/fake_openai.py) whose answers this module writes. For each request it reads
what the real prompt holds, and nothing else: the meeting date, the numbered lines of the segment
("[n] Speaker: words" or "[n] sentence") and the project's earlier items ("E1 (decision, date):
description"). It answers as a model that agrees with the note-taker would:

- every labelled item whose quote is on one of the lines and not in what the document lists under its
  own headings (shown as "- kind: description"), at that line, described by the label's
  ``statement``, with the owner who first took it (``assigned_to``), the first due date said
  (``first_due``), and for a decision the E-label of the earlier decision it replaces;
- every later mention a label lists (``updates``) that is on one of the lines and reports the item
  done, cancelled, handed over, rescheduled or closed, as a change of that item's E-label (a handover
  with the label's new due date when no other mention moves it);
- asked which earlier decision the decisions a notes section lists replace ("L1: description"), the
  E-label of the one each labelled decision replaces.

So the figures it produces measure what the pipeline around the model keeps of right answers: the
structured-output schema and its parsing, the mapping of lines back to turns and characters, the
owners' canonical names, dates, the E-labels and the links stored from them. They are an upper bound
for a real model, not a measure of one.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

NUMBERED = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)
EARLIER = re.compile(r"^(E\d+) \((\w+), [^)]*\): (.*)$", re.MULTILINE)
LISTED = re.compile(r"^(L\d+): (.*)$", re.MULTILINE)
LISTED_ITEM = re.compile(r"^- (decision|risk|opportunity|task): (.*)$", re.MULTILINE)  # what the document lists
MEETING_DATE = re.compile(r"^Meeting date: (\d{4}-\d{2}-\d{2})$", re.MULTILINE)
CHANGES = {"done": "done", "cancelled": "cancelled", "handed_over": "reassigned", "reassigned": "reassigned",
           "rescheduled": "rescheduled", "closed": "closed"}  # fmt: skip


LIST_MARKER = re.compile(r"^\s*(?:[-*+\u2022]|\d+[.)])\s+")


def _normal(text: str) -> str:
    return " ".join(text.split()).casefold()


def _quoted(quote: str) -> str:
    """A label's quote as a note's item reads once taken from its list: "- Ray is offered to ..." -> "ray is ..."."""
    return _normal(LIST_MARKER.sub("", quote))


def _dates_handover(label: dict[str, Any], change: str) -> bool:
    """Whether a handover also gives the task its new date: the label's due date moved and no later mention of it
    is a rescheduling of its own ("Derek, would you take it on? By the 8th?")."""
    moved = label.get("due") != label.get("first_due", label.get("due"))
    rescheduled = any(CHANGES.get(u.get("change", "")) == "rescheduled" for u in label.get("updates", []))
    return change == "reassigned" and moved and not rescheduled


class OracleModel:
    """Answers ``ProposedKnowledge`` requests from the raw labels of the projects being measured."""

    def __init__(self, label_files: list[Path]) -> None:
        # Each label with its project (its file's folder): projects may number their labels alike.
        self.labels = [
            {**json.loads(line), "project": path.parent.name}
            for path in label_files
            for line in path.read_text().splitlines()
            if line.strip()
        ]
        self.answered = 0
        self.prompt_tokens = self.answer_tokens = 0  # what a model would read and write, counted in cl100k tokens

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        """An OpenAI chat completion request's answer (the structured output's content)."""
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        answer = self.answer(body["response_format"]["json_schema"]["name"], user)
        return self._counted(answer, system, user, json.dumps(body["response_format"]))

    def converse(self, body: dict[str, Any]) -> dict[str, Any]:
        """A Bedrock Converse request's answer: the response calling the tool it must call."""
        from tests.artifact.fake_bedrock import FakeBedrock

        schema, user = body["toolConfig"]["toolChoice"]["tool"]["name"], body["messages"][0]["content"][0]["text"]
        answer = self._counted(self.answer(schema, user), body["system"][0]["text"], user, json.dumps(body["toolConfig"]))
        return FakeBedrock.tool_reply(schema, answer)

    def _counted(self, answer: dict[str, Any], *prompt: str) -> dict[str, Any]:
        from rag.embedding.tokens import count_cl100k

        self.prompt_tokens += sum(count_cl100k(part) for part in prompt)
        self.answer_tokens += count_cl100k(json.dumps(answer))
        return answer

    def answer(self, schema: str, prompt: str) -> dict[str, Any]:
        if schema == "ListedDecisionLinks":
            self.answered += 1
            return self._listed_links(prompt)
        if schema != "ProposedKnowledge":
            raise ValueError(f"the oracle answers extraction and listed links only, not {schema}")
        day = MEETING_DATE.search(prompt)
        lines = {int(n): _normal(text) for n, text in NUMBERED.findall(prompt)}
        earlier = {_normal(description): (label, kind) for label, kind, description in EARLIER.findall(prompt)}
        listed = [(kind, _normal(description)) for kind, description in LISTED_ITEM.findall(prompt)]
        meeting_day = day.group(1) if day else None
        answer: dict[str, list[dict[str, Any]]] = {"decisions": [], "risks": [], "opportunities": [], "tasks": [], "changes": []}
        for label in self.labels:
            if meeting_day and label["meeting"].startswith(meeting_day):
                line = self._line_of(label["quote"], lines)
                recorded = any(kind == label["kind"] and _quoted(label["quote"]) in said for kind, said in listed)
                if line is not None and not recorded:  # the notes' prose saying again what their list holds
                    self._add_item(answer, label, line, earlier)
            for update in label.get("updates", []):
                change = CHANGES.get(update.get("change", ""))
                if change is None or not (meeting_day and update["meeting"].startswith(meeting_day)):
                    continue
                line = self._line_of(update["quote"], lines)
                target = self._earlier(label, earlier)
                if line is not None and target is not None:
                    answer["changes"].append(
                        {"first": line, "last": line, "evidence": update["quote"], "item": target[0], "change": change,
                         "new_owner": label.get("owner") if change == "reassigned" else None,
                         "new_due_date": label.get("due") if change == "rescheduled" or _dates_handover(label, change)
                         else None}
                    )  # fmt: skip
        self.answered += 1
        return answer

    def _listed_links(self, prompt: str) -> dict[str, Any]:
        """For each listed decision (``L<n>: description``, the notes' words) that is a label's, the E-label of
        the earlier decision that label replaces."""
        day = MEETING_DATE.search(prompt)
        earlier = {_normal(description): (label, kind) for label, kind, description in EARLIER.findall(prompt)}
        links = []
        for listed, description in LISTED.findall(prompt):
            words = _normal(description)
            for label in self.labels:
                if not (day and label["meeting"].startswith(day.group(1)) and label["kind"] == "decision"):
                    continue
                if _quoted(label["quote"]) not in words:
                    continue
                replaced = next((e for e in self.labels
                                 if e["project"] == label["project"] and e.get("superseded_by") == label["id"]), None)  # fmt: skip
                target = self._earlier(replaced, earlier) if replaced else None
                if target is not None:
                    links.append({"listed": listed, "supersedes": target[0]})
                    break
        return {"links": links}

    @staticmethod
    def _earlier(label: dict[str, Any], earlier: dict[str, tuple[str, str]]) -> tuple[str, str] | None:
        """The E-label of the earlier item that is ``label``'s: its statement (what the oracle described it
        as), or, for an item a notes section listed as written, the one whose words hold the label's quote."""
        statement, quote = _normal(label["statement"]), _quoted(label["quote"])
        if statement in earlier:
            return earlier[statement]
        return next((target for description, target in earlier.items() if quote in description), None)

    @staticmethod
    def _line_of(quote: str, lines: dict[int, str]) -> int | None:
        wanted = _normal(quote)
        return next((n for n, text in sorted(lines.items()) if wanted in text), None)

    def _add_item(self, answer: dict[str, list[dict[str, Any]]], label: dict[str, Any], line: int,
                  earlier: dict[str, tuple[str, str]]) -> None:  # fmt: skip
        located = {"first": line, "last": line, "evidence": label["quote"], "description": label["statement"]}
        kind = label["kind"]
        if kind == "decision":
            replaced = next(
                (e for e in self.labels if e["project"] == label["project"] and e.get("superseded_by") == label["id"]),
                None,
            )
            target = self._earlier(replaced, earlier) if replaced else None
            answer["decisions"].append({**located, "rationale": None, "owner": None, "impact": None,
                                        "supersedes": target[0] if target else None})  # fmt: skip
        elif kind == "risk":
            answer["risks"].append({**located, "category": None, "likelihood": None, "impact": None, "mitigation": None})
        elif kind == "opportunity":
            answer["opportunities"].append({**located, "type": None, "owner": None, "next_step": None})
        else:
            first_due = label.get("first_due", label.get("due"))
            answer["tasks"].append({**located, "assignee": label.get("assigned_to") or label.get("owner"),
                                    "due_date": first_due, "status": "open"})  # fmt: skip
