"""Whether ``POST /v1/ask`` (extractive: no model) finds evidence when there is some, and only then.

Two rates, both through the real query handler, each question asked across its project:
answerable questions (the graded queries) answered "nothing found", and questions no
meeting discussed (a JSON-lines file of ``{"qid", "domain", "query"}``) answered "nothing
found". The first should be near 0, the second near 1; ``ask_min_evidence`` trades one
for the other.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
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
class AskingScores:
    answerable: int
    answerable_not_found: list[str]  # qids
    unanswerable: int
    unanswerable_not_found: list[str]

    def as_dict(self) -> dict[str, Any]:
        return {
            "answerable": self.answerable, "answerable_not_found": len(self.answerable_not_found),
            "answerable_not_found_rate": _rate(len(self.answerable_not_found), self.answerable),
            "unanswerable": self.unanswerable, "unanswerable_not_found": len(self.unanswerable_not_found),
            "unanswerable_not_found_rate": _rate(len(self.unanswerable_not_found), self.unanswerable),
            "answerable_not_found_qids": self.answerable_not_found,
        }  # fmt: skip

    def summary(self) -> str:
        a, u = len(self.answerable_not_found), len(self.unanswerable_not_found)
        return (
            f'asking (extractive, across the project): answered "nothing found": '
            f"answerable {a}/{self.answerable} ({_rate(a, self.answerable):.1%}), "
            f"unanswerable {u}/{self.unanswerable} ({_rate(u, self.unanswerable):.1%})"
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


def nothing_found(handler: Any, question: str, project: str, tenant: str) -> bool:
    """Whether ``POST /v1/ask`` answers "nothing found" (no citation) to ``question`` within ``project``."""
    from rag_local.api_server import http_api_event
    from rag_local.lambdas import LocalContext

    body = json.dumps({"question": question, "project_ids": [project]}).encode()
    event = http_api_event("POST", "/v1/ask", {"Content-Type": "application/json"}, body, tenant, "eval")
    response = handler(event, LocalContext(function_name="query"))
    payload = json.loads(response["body"])
    if response["statusCode"] != 200:
        raise RuntimeError(f"ask answered {response['statusCode']}: {payload.get('message', payload)}")
    return not payload["citations"]


def run_asking(
    answerable: list[tuple[str, str, str]], unanswerable: list[UnanswerableQuery], tenant: str, *, progress: bool
) -> AskingScores:
    """Ask every question ((qid, project, question) for the answerable ones) through the query handler."""
    from tqdm import tqdm

    from rag.config import get_settings
    from rag_local.lambdas import load_handler_module

    saved = os.environ.get("RAG_LLM_PROVIDER")
    os.environ["RAG_LLM_PROVIDER"] = "none"  # the extractive answer: what the evidence floor alone decides
    get_settings.cache_clear()
    try:
        handler = load_handler_module("query").lambda_handler
        missed = [qid for qid, project, question in tqdm(answerable, desc="ask/answerable", disable=not progress, leave=False)
                  if nothing_found(handler, question, project, tenant)]  # fmt: skip
        refused = [q.qid for q in tqdm(unanswerable, desc="ask/unanswerable", disable=not progress, leave=False)
                   if nothing_found(handler, q.query, q.domain, tenant)]  # fmt: skip
    finally:
        if saved is None:
            os.environ.pop("RAG_LLM_PROVIDER", None)
        else:
            os.environ["RAG_LLM_PROVIDER"] = saved
        get_settings.cache_clear()
    return AskingScores(len(answerable), missed, len(unanswerable), refused)
