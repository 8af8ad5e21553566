"""Whether ``POST /v1/ask`` (extractive: no model) finds evidence when there is some, and only then.

Two rates, both through the real query handler, each question asked across its project:
answerable questions (the graded queries) answered "nothing found", and questions no
meeting discussed (a JSON-lines file of ``{"qid", "domain", "query"}``) answered "nothing
found". The first should be near 0, the second near 1; ``ask_min_evidence`` trades one
for the other. Of the answerable questions that got an answer, how often its first citation
is in the query's meeting and its turns overlap the gold turns.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from rag_local.evaluation.dataset import DatasetError


class UnanswerableQuery(BaseModel):
    """A question about something no meeting of ``domain`` discussed."""

    model_config = ConfigDict(extra="ignore")

    qid: str
    domain: str
    query: str


@dataclass(frozen=True)
class AnswerableQuestion:
    qid: str
    project: str
    question: str
    document_id: str  # the graded meeting's document
    relevant_turns: list[tuple[int, int]]  # inclusive gold turn ranges


@dataclass(frozen=True)
class AskingScores:
    answerable: int
    answerable_not_found: list[str]  # qids
    unanswerable: int
    unanswerable_not_found: list[str]
    first_citation_on_gold: list[str] = field(default_factory=list)  # qids whose first citation overlaps gold turns

    @property
    def answered(self) -> int:
        return self.answerable - len(self.answerable_not_found)

    def as_dict(self) -> dict[str, Any]:
        return {
            "answerable": self.answerable, "answerable_not_found": len(self.answerable_not_found),
            "answerable_not_found_rate": _rate(len(self.answerable_not_found), self.answerable),
            "unanswerable": self.unanswerable, "unanswerable_not_found": len(self.unanswerable_not_found),
            "unanswerable_not_found_rate": _rate(len(self.unanswerable_not_found), self.unanswerable),
            "first_citation_on_gold": len(self.first_citation_on_gold),
            "first_citation_on_gold_rate": _rate(len(self.first_citation_on_gold), self.answered),
            "answerable_not_found_qids": self.answerable_not_found,
        }  # fmt: skip

    def summary(self) -> str:
        a, u, g = len(self.answerable_not_found), len(self.unanswerable_not_found), len(self.first_citation_on_gold)
        return (
            f'asking (extractive, across the project): answered "nothing found": '
            f"answerable {a}/{self.answerable} ({_rate(a, self.answerable):.1%}), "
            f"unanswerable {u}/{self.unanswerable} ({_rate(u, self.unanswerable):.1%}); "
            f"first citation on the gold turns {g}/{self.answered} ({_rate(g, self.answered):.1%}) of the answered"
        )


def _rate(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def load_unanswerable(path: Path) -> list[UnanswerableQuery]:
    if not path.is_file():
        raise DatasetError(f"{path}: no such file")
    queries = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                queries.append(UnanswerableQuery.model_validate(json.loads(line)))
            except (json.JSONDecodeError, ValidationError) as exc:
                raise DatasetError(f"{path}:{number}: not a question of the form {{qid, domain, query}}: {exc}") from exc
    if not queries:
        raise DatasetError(f"{path}: no questions")
    return queries


def citations_of(handler: Any, question: str, project: str, tenant: str) -> list[dict[str, Any]]:
    """The citations of ``POST /v1/ask``'s answer to ``question`` within ``project`` (none: "nothing found")."""
    from rag_local.api_server import http_api_event
    from rag_local.lambdas import LocalContext

    body = json.dumps({"question": question, "project_ids": [project]}).encode()
    event = http_api_event("POST", "/v1/ask", {"Content-Type": "application/json"}, body, tenant, "eval")
    response = handler(event, LocalContext(function_name="query"))
    payload = json.loads(response["body"])
    if response["statusCode"] != 200:
        raise RuntimeError(f"ask answered {response['statusCode']}: {payload.get('message', payload)}")
    return list(payload["citations"])


def on_gold(citation: dict[str, Any], question: AnswerableQuestion) -> bool:
    """Whether a citation is in the question's meeting and its turns overlap one of the gold turn ranges."""
    first, last = citation.get("start_turn"), citation.get("end_turn")
    if citation["document_id"] != question.document_id or first is None:
        return False
    last = first if last is None else last
    return any(first <= gold_last and gold_first <= last for gold_first, gold_last in question.relevant_turns)


def run_asking(
    answerable: list[AnswerableQuestion], unanswerable: list[UnanswerableQuery], tenant: str, *, progress: bool
) -> AskingScores:
    """Ask every question through the query handler."""
    from tqdm import tqdm

    from rag.config import get_settings
    from rag_local.lambdas import load_handler_module

    saved = os.environ.get("RAG_LLM_PROVIDER")
    os.environ["RAG_LLM_PROVIDER"] = "none"  # the extractive answer: what the evidence floor alone decides
    get_settings.cache_clear()
    try:
        handler = load_handler_module("query").lambda_handler
        missed, on_target = [], []
        for question in tqdm(answerable, desc="ask/answerable", disable=not progress, leave=False):
            citations = citations_of(handler, question.question, question.project, tenant)
            if not citations:
                missed.append(question.qid)
            elif on_gold(min(citations, key=lambda c: c["n"]), question):
                on_target.append(question.qid)
        refused = [q.qid for q in tqdm(unanswerable, desc="ask/unanswerable", disable=not progress, leave=False)
                   if not citations_of(handler, q.query, q.domain, tenant)]  # fmt: skip
    finally:
        if saved is None:
            os.environ.pop("RAG_LLM_PROVIDER", None)
        else:
            os.environ["RAG_LLM_PROVIDER"] = saved
        get_settings.cache_clear()
    return AskingScores(len(answerable), missed, len(unanswerable), refused, on_target)
