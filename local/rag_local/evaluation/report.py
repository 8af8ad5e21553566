"""The terminal table of an evaluation."""

from __future__ import annotations

from rag_local.evaluation.runner import EvalReport

COLUMNS = (("R@1", "recall@1"), ("R@5", "recall@5"), ("R@10", "recall@10"), ("MRR@10", "mrr@10"),
           ("nDCG@10", "ndcg@10"), ("cov@10", "coverage@10"), ("turns/hit", "hit_turns@10"))  # fmt: skip


def _row(label: str, scores: dict[str, float]) -> str:
    cells = "".join(f"{scores[key]:>{max(len(title), 6) + 2}.{1 if key == 'hit_turns@10' else 3}f}" for title, key in COLUMNS)
    return f"{label:<28}{cells}{int(scores['n']):>6}"


def format_report(report: EvalReport) -> str:
    header = f"{'run':<28}" + "".join(f"{title:>{max(len(title), 6) + 2}}" for title, _ in COLUMNS) + f"{'n':>6}"
    lines = [
        f"database {report.database}: {report.documents} transcripts, {report.chunks} chunks "
        f"(ingest {report.ingest_seconds:.1f} s)",
    ]
    for meeting, error in sorted(report.failed_documents.items()):
        lines.append(f"FAILED transcript {meeting}: {error}")
    if report.skipped_queries:
        shown = ", ".join(report.skipped_queries[:5]) + (" ..." if len(report.skipped_queries) > 5 else "")
        lines.append(f"skipped {len(report.skipped_queries)} queries whose meeting is not in the folder: {shown}")
    lines += ["", header, "-" * len(header)]
    for run in report.runs:
        lines.append(_row(f"{run.setting}/{run.mode}", run.scores["overall"]))
        for project, scores in run.scores["per_domain"].items():
            lines.append(_row(f"  {project}", scores))
    if report.asking is not None:
        lines += ["", report.asking.summary()]
    return "\n".join(lines)
