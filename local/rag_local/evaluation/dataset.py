"""An evaluation set: ``<project>/<meeting_id>.txt`` transcripts and a JSON-lines queries file."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class EvalQuery(BaseModel):
    """One graded query; ``relevant_turns`` are inclusive, 0-based turn ranges of ``meeting_id``."""

    model_config = ConfigDict(extra="ignore")

    qid: str
    meeting_id: str
    domain: str = Field(description="the meeting's project")
    query: str
    relevant_turns: list[tuple[int, int]] = Field(min_length=1)


@dataclass(frozen=True)
class Transcript:
    project: str
    meeting_id: str
    path: Path

    @property
    def key(self) -> str:
        return f"projects/{self.project}/{self.path.name}"


class DatasetError(ValueError):
    """The transcripts folder or the queries file cannot be used; the message says why."""


def find_transcripts(folder: Path) -> list[Transcript]:
    if not folder.is_dir():
        raise DatasetError(f"{folder}: not a folder")
    found = [Transcript(p.parent.name, p.stem, p) for p in sorted(folder.glob("*/*.txt")) if not p.name.startswith(".")]
    if not found:
        raise DatasetError(f"{folder}: no transcripts in the layout <project>/<meeting_id>.txt")
    seen: dict[str, Transcript] = {}
    for transcript in found:
        if (other := seen.setdefault(transcript.meeting_id, transcript)) is not transcript:
            raise DatasetError(f"meeting id {transcript.meeting_id!r} is used twice: {other.path} and {transcript.path}")
    return found


def load_queries(path: Path) -> list[EvalQuery]:
    if not path.is_file():
        raise DatasetError(f"{path}: no such file")
    queries, qids = [], set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            query = EvalQuery.model_validate(json.loads(line))
        except (json.JSONDecodeError, ValidationError) as exc:
            raise DatasetError(f"{path}:{number}: not a query of the eval schema: {exc}") from exc
        if query.qid in qids:
            raise DatasetError(f"{path}:{number}: qid {query.qid!r} appears twice")
        qids.add(query.qid)
        queries.append(query)
    if not queries:
        raise DatasetError(f"{path}: no queries")
    return queries
