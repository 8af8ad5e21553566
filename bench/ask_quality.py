"""Answer quality: questions about labelled multi-meeting projects, asked as ``POST /v1/ask`` answers them without a model.

    .venv/bin/python bench/ask_quality.py [bench/projects/desk-lamp-launch ...] [--show] [--json]

Each project folder (default: every folder of ``bench/projects`` with a ``questions.jsonl``) holds its
meetings and ``questions.jsonl``, one question a line::

    {"question": "When is the launch?", "expect": [["May 26"]], "meetings": ["2026-04-08-go-no-go.srt"]}

``expect`` lists the key phrases the answer must hold, each as a list of alternatives (any one will do);
a decision changed in a later meeting expects the current one. ``meetings`` names the meetings (file
names) that hold the answer as it stands after every meeting.

The meetings are ingested and the offline backfill run as ``bench/knowledge_quality.py`` does (its
``ingest`` and ``run_backfill``), into a database of the script's own (created, migrated and dropped).
Each question is then answered by ``rag.ask.answer.ask`` (the function behind ``POST /v1/ask``) within
its project, with no chat model: the extractive answer or a listing. Figures, overall and per project:

- answer right: the answer holds every expected phrase (one alternative of each), case and spacing ignored;
- cites a meeting that holds the answer: one of its citations is a passage of a listed meeting;
- nothing found: the answer says it found nothing;
- words: the median length of an answer in words (citation marks included), read beside the others: a longer
  answer holds an expected phrase more easily.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rag.ask.types import Answer

sys.path.insert(0, str(Path(__file__).resolve().parent))

from knowledge_quality import ingest, meeting_files, run_backfill  # noqa: E402

PROJECTS = Path(__file__).resolve().parent / "projects"
TENANT = "bench"


@dataclass(frozen=True)
class Question:
    project: str
    question: str
    expect: tuple[tuple[str, ...], ...]  # every group must be matched by one of its alternatives
    meetings: tuple[str, ...]


@dataclass(frozen=True)
class Graded:
    question: Question
    answer: str
    cited: tuple[str, ...]  # the meetings of the answer's citations, in citation order
    right: bool
    cites_answer: bool
    nothing_found: bool


def squeeze(text: str) -> str:
    """``text`` lowercased with every space removed: how phrases are compared."""
    return re.sub(r"\s+", "", text).lower()


def holds(text: str, expect: Sequence[Sequence[str]]) -> bool:
    body = squeeze(text)
    return all(any(squeeze(alternative) in body for alternative in group) for group in expect)


def load_questions(folder: Path) -> list[Question]:
    questions = []
    for n, line in enumerate((folder / "questions.jsonl").read_text().splitlines(), 1):
        if not line.strip():
            continue
        entry = json.loads(line)
        expect = tuple(tuple(group) for group in entry["expect"])
        if not expect or not all(expect):
            raise SystemExit(f"{folder.name}/questions.jsonl:{n}: expect needs at least one phrase in every group")
        questions.append(Question(folder.name, entry["question"], expect, tuple(entry["meetings"])))
    return questions


def check_questions(folder: Path, questions: Sequence[Question]) -> list[str]:
    """Questions whose meetings do not exist, or whose listed meetings together do not hold every expected phrase."""
    from rag.parsing import parse_document

    texts = {path.name: parse_document(path.read_bytes(), path.name).text for path in meeting_files(folder)}
    wrong = []
    for q in questions:
        missing = [m for m in q.meetings if m not in texts]
        if missing or not q.meetings:
            wrong.append(f"{q.project}: {q.question!r} names no meeting or unknown ones: {missing}")
        elif not holds("\n".join(texts[m] for m in q.meetings), q.expect):
            wrong.append(f"{q.project}: {q.question!r}: its meetings do not hold {q.expect}")
    return wrong


def grade(question: Question, reply: Answer, meeting_of: dict[str, str]) -> Graded:
    from rag.ask.extractive import NOT_FOUND

    cited = tuple(meeting_of.get(c.passage.document_id, "?") for c in reply.citations)
    return Graded(
        question=question, answer=reply.text, cited=cited, right=holds(reply.text, question.expect),
        cites_answer=any(m in question.meetings for m in cited), nothing_found=reply.text.startswith(NOT_FOUND),
    )  # fmt: skip


def ask_all(folders: Sequence[Path], questions: Sequence[Question], batch_size: int) -> list[Graded]:
    """The projects into a new database, the offline backfill, then every question through ``ask``."""
    from common import bench_database
    from rag.ask.answer import ask
    from rag.ask.types import Question as Asked
    from rag.config import Settings
    from rag.embedding import get_embedder
    from rag.store.connection import connect
    from rag.store.migrations import migrate_database
    from rag_local.backfill import quiet_powertools

    quiet_powertools()
    with bench_database() as url:
        settings = Settings(database_url=url, llm_provider="none")
        print(f"database ready; embedding with {settings.embedding.model_id}, no chat model", flush=True)
        migrate_database(settings, url)
        embedder = get_embedder(settings)
        with connect(url) as conn:
            for folder in folders:
                ingest(conn, settings, embedder, folder, TENANT)
            run_backfill(conn, settings, embedder, batch_size)
            meeting_of = {
                str(doc_id): key.rsplit("/", 1)[1]
                for doc_id, key in conn.execute("SELECT id, object_key FROM documents WHERE tenant_id = %s", (TENANT,))
            }
            graded = []
            for q in questions:
                reply = ask(conn, settings, TENANT, Asked(q.question, (q.project,)), embedder=embedder)
                graded.append(grade(q, reply, meeting_of))
    return graded


def figures(graded: Sequence[Graded]) -> dict[str, Any]:
    n = len(graded)

    def rate(count: int) -> dict[str, Any]:
        return {"count": count, "of": n, "rate": round(count / n, 3) if n else None}

    return {
        "questions": n,
        "answer_right": rate(sum(g.right for g in graded)),
        "cites_a_meeting_holding_the_answer": rate(sum(g.cites_answer for g in graded)),
        "nothing_found": rate(sum(g.nothing_found for g in graded)),
        # How long the answers are: a longer answer holds an expected phrase more easily, so it is read beside them.
        "answer_words_median": statistics.median(len(g.answer.split()) for g in graded) if graded else None,
    }


def format_figures(name: str, f: dict[str, Any]) -> str:
    def cell(key: str) -> str:
        return f"{f[key]['count']:>3}/{f[key]['of']:<3} {f[key]['rate']:.2f}" if f[key]["of"] else "-"

    words = f"{f['answer_words_median']:g}" if f["answer_words_median"] is not None else "-"
    return (
        f"{name:<24} {cell('answer_right'):>14} {cell('cites_a_meeting_holding_the_answer'):>14} {cell('nothing_found'):>14}"
        f" {words:>8}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("projects", type=Path, nargs="*", help="project folders with questions.jsonl (default: bench/projects/*)")
    parser.add_argument(
        "--show", action="store_true", help="also list each question answered wrong or citing no meeting that holds it"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON (progress goes to stderr)")
    parser.add_argument("--batch-size", type=int, default=10)
    args = parser.parse_args()
    folders = args.projects or sorted(p for p in PROJECTS.iterdir() if (p / "questions.jsonl").is_file())
    missing = [str(folder) for folder in folders if not (folder / "questions.jsonl").is_file()]
    if missing:
        print(f"no questions.jsonl in {', '.join(missing)}", file=sys.stderr)
        return 1
    if len({folder.name for folder in folders}) != len(folders):
        print("two projects have the same folder name", file=sys.stderr)
        return 1
    questions = [q for folder in folders for q in load_questions(folder)]
    wrong = [line for folder in folders for line in check_questions(folder, [q for q in questions if q.project == folder.name])]
    if wrong:
        raise SystemExit("questions that their meetings cannot answer:\n  " + "\n  ".join(wrong))
    if args.json:
        sys.stdout = sys.stderr  # progress lines; the JSON goes to the real stdout below
    graded = ask_all(folders, questions, args.batch_size)
    report = {folder.name: figures([g for g in graded if g.question.project == folder.name]) for folder in folders}
    report["all"] = figures(graded)
    if args.json:
        sys.stdout = sys.__stdout__
        print(json.dumps(report, indent=2))
        return 0
    print(f"\n{'project':<24} {'answer right':>14} {'cites meeting':>14} {'nothing found':>14} {'words':>8}")
    for name, f in report.items():
        print(format_figures(name, f))
    if args.show:
        for g in graded:
            if g.right and g.cites_answer:
                continue
            problems = ", ".join(
                p for p, bad in (("answer wrong", not g.right), ("cites no meeting holding it", not g.cites_answer)) if bad
            )
            print(f"\n{g.question.project}: {g.question.question}  [{problems}]")
            print(f"  expected {' + '.join('/'.join(group) for group in g.question.expect)} in {', '.join(g.question.meetings)}")
            print(f"  cited {', '.join(dict.fromkeys(g.cited)) or 'nothing'}")
            print("  " + g.answer.replace("\n", "\n  "))
    return 0


if __name__ == "__main__":
    sys.exit(main())
