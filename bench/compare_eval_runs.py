"""Paired difference of two `rag eval` runs, query by query, with a bootstrap interval.

    .venv/bin/python bench/compare_eval_runs.py BASELINE_DIR CANDIDATE_DIR [--queries ../shared/eval/queries.jsonl]

Both directories hold `rag eval --out` results (``<setting>-<mode>.results.jsonl``). For every
setting and mode present in both, prints MRR@10 and nDCG@10 of each run and the mean
per-query difference (candidate - baseline) with its 95% bootstrap interval (10,000 resamples
of the queries, fixed seed): a difference whose interval holds 0 is not told apart from noise.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

from rag_local.evaluation.dataset import load_queries
from rag_local.evaluation.metrics import Hit, score_query

METRICS = ("mrr@10", "ndcg@10")


def per_query(results: Path, queries: list[object]) -> dict[str, dict[str, float]]:
    rows = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines() if line.strip()]
    hits_of = {r["qid"]: [Hit(h["meeting_id"], h["start_turn"], h["end_turn"], h["score"]) for h in r["hits"]] for r in rows}
    return {
        q.qid: score_query(q.meeting_id, q.relevant_turns, hits_of.get(q.qid, []))  # type: ignore[attr-defined]
        for q in queries
    }


def bootstrap(differences: list[float], resamples: int = 10_000, seed: int = 15) -> tuple[float, float]:
    rng = random.Random(seed)
    n = len(differences)
    means = sorted(sum(rng.choice(differences) for _ in range(n)) / n for _ in range(resamples))
    return means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("baseline", type=Path)
    parser.add_argument("candidate", type=Path)
    parser.add_argument("--queries", type=Path, default=Path("../shared/eval/queries.jsonl"))
    args = parser.parse_args()
    queries: list[object] = list(load_queries(args.queries))
    print(f"{'run':<18} {'metric':<8} {'baseline':>8} {'candidate':>9} {'difference [95% interval]':>30}")
    for path in sorted(args.baseline.glob("*.results.jsonl")):
        other = args.candidate / path.name
        if not other.is_file():
            continue
        before, after = per_query(path, queries), per_query(other, queries)
        common = sorted(set(before) & set(after))
        for metric in METRICS:
            differences = [after[q][metric] - before[q][metric] for q in common]
            low, high = bootstrap(differences)
            mean_before = sum(before[q][metric] for q in common) / len(common)
            mean_after = sum(after[q][metric] for q in common) / len(common)
            print(
                f"{path.name.removesuffix('.results.jsonl'):<18} {metric:<8} {mean_before:>8.3f} {mean_after:>9.3f}"
                f" {mean_after - mean_before:>+12.3f} [{low:+.3f}, {high:+.3f}]"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
