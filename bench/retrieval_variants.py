"""Retrieval variants that the product does not build, scored as `rag eval` scores the product.

    .venv/bin/python bench/retrieval_variants.py --transcripts ../shared/eval/transcripts \\
        --queries ../shared/eval/queries.jsonl [--variants chunks,windows,two-stage]

`rag eval` measures the code as it is; this measures what it could be, without
re-ingesting: the same parser, chunker, marker stripping, query text, local model and
metrics (``rag_local.evaluation.metrics``), PostgreSQL's own english stemming for
BM25 (k1 1.2, b 0.75, IDF and average length over the project), and exact (full-scan)
ranking. On the product's own settings it reproduces `rag eval` to the third decimal
(docs/retrieval-experiments.md). Vectors are cached by text in
``.local/bench-cache/`` so later runs embed only what is new.

Variants:
- chunks: the product's chunks (254 tokens, 50 overlap), one vector each;
- windows: ~200-word windows of whole turns every 100 words (and non-overlapping),
  scored by one vector or by the best of their <=254-token pieces (max over pieces);
- two-stage: meetings ranked first (BM25 over the whole meeting, cosine to the mean of
  its chunk vectors, fused), then the chunks of the best M meetings boosted or fused
  with the flat project search.
Every variant is scored semantic, keyword, RRF (k 60) and convex (min-max, share .5/.7).
"""

from __future__ import annotations

import argparse
import json
import math
import pickle
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import bench_database  # noqa: E402
from rag.chunking import Unit, chunk_document, pack  # noqa: E402
from rag.config import REPO_ROOT, Settings  # noqa: E402
from rag.embedding import get_embedder  # noqa: E402
from rag.index_text import index_text  # noqa: E402
from rag.parsing import ParsedDocument, parse_document  # noqa: E402
from rag.search.query_text import search_text  # noqa: E402
from rag_local.evaluation.metrics import Hit, aggregate, score_query  # noqa: E402

CANDIDATES = 40  # per side, as the product's hybrid statement takes for top_k 10
FUSIONS: tuple[tuple[str, float], ...] = (("semantic", 1), ("keyword", 0), ("rrf", 0), ("convex", 0.5), ("convex", 0.7))


@dataclass(frozen=True)
class Passage:
    meeting: str
    start_turn: int
    end_turn: int
    text: str  # what BM25 reads
    pieces: tuple[str, ...]  # what is embedded (one vector each; the unit scores the best)


class Corpus:
    """Transcripts, queries, an embedding cache and PostgreSQL's lexemes."""

    def __init__(self, transcripts: Path, queries: Path, conn: object):
        self.docs: dict[str, tuple[str, ParsedDocument]] = {
            p.stem: (p.parent.name, parse_document(p.read_bytes(), p.name)) for p in sorted(transcripts.glob("*/*.txt"))
        }
        self.queries = [json.loads(line) for line in queries.read_text().splitlines() if line.strip()]
        self.conn = conn
        self.embedder = get_embedder(Settings(embedding_provider="local"))
        self.cache_path = REPO_ROOT / ".local" / "bench-cache" / f"vectors-{self.embedder.model_id.replace('/', '_')}.pkl"
        self.vectors: dict[str, np.ndarray] = pickle.loads(self.cache_path.read_bytes()) if self.cache_path.exists() else {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        for start in range(0, len(todo), 256):
            print(f"  embedding {start + 1}-{min(start + 256, len(todo))} of {len(todo)}", file=sys.stderr, flush=True)
            part = todo[start : start + 256]
            self.vectors.update(zip(part, np.asarray(self.embedder.embed(part), dtype=np.float32)))
        if todo:
            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
            self.cache_path.write_bytes(pickle.dumps(self.vectors))
        return np.stack([self.vectors[t] for t in texts])

    def lexemes(self, texts: Sequence[str]) -> list[dict[str, int]]:
        """Term frequencies exactly as the product's tsvectors hold them."""
        out: list[dict[str, int]] = []
        for start in range(0, len(texts), 500):
            rows = self.conn.execute(  # type: ignore[attr-defined]
                """SELECT (SELECT coalesce(jsonb_object_agg(lexeme, cardinality(positions)), '{}'::jsonb)
                           FROM unnest(to_tsvector('english', t)))
                   FROM unnest(%s::text[]) WITH ORDINALITY AS x(t, n) ORDER BY n""",
                (list(texts[start : start + 500]),),
            ).fetchall()
            out.extend(row[0] for row in rows)
        return out

    def count(self, text: str) -> int:
        return self.embedder.count_tokens(text)


def product_chunks(corpus: Corpus, max_tokens: int = 254, overlap: int = 50) -> list[Passage]:
    units = []
    for meeting, (_, doc) in corpus.docs.items():
        for c in chunk_document(doc, corpus.count, max_tokens, overlap):
            text = index_text(c.text)
            units.append(Passage(meeting, c.start_turn or 0, c.end_turn or 0, text, (text,)))
    return units


def windows(corpus: Corpus, words: int, stride: float, piece_tokens: int = 254) -> list[Passage]:
    """Windows of whole turns of about ``words`` words, one starting every ``stride`` x ``words`` words."""
    units = []
    for meeting, (_, doc) in corpus.docs.items():
        turns = doc.turns
        sizes = [len(index_text(t.text).split()) + 1 for t in turns]
        starts, run = [0], 0
        for i, size in enumerate(sizes[:-1]):
            run += size
            if run >= stride * words:
                starts.append(i + 1)
                run = 0
        seen = set()
        for s in starts:
            e, total = s, sizes[s]
            while e + 1 < len(turns) and total + sizes[e + 1] <= words:
                e += 1
                total += sizes[e]
            if (s, e) in seen:
                continue
            seen.add((s, e))
            spans = [Unit(t.start_char, t.end_char, corpus.count(doc.text[t.start_char : t.end_char])) for t in turns[s : e + 1]]
            pieces = tuple(index_text(doc.text[p.start : p.end]) for p in pack(doc.text, spans, corpus.count, piece_tokens, 0))
            units.append(Passage(meeting, s, e, index_text(doc.text[turns[s].start_char : turns[e].end_char]), pieces))
    return units


class Index:
    """A variant's units with their vectors and lexemes; ranks them for one query."""

    def __init__(self, corpus: Corpus, units: list[Passage], scoring: str):
        self.corpus, self.units = corpus, units
        self.lexemes = corpus.lexemes([u.text for u in units])
        if scoring == "max":
            piece_vectors = corpus.embed([p for u in units for p in u.pieces])
            owner = np.repeat(np.arange(len(units)), [len(u.pieces) for u in units])
            self.vectors, self.owner = piece_vectors, owner
        else:
            self.vectors, self.owner = corpus.embed([u.text for u in units]), np.arange(len(units))
        self.by_meeting: dict[str, list[int]] = defaultdict(list)
        self.by_project: dict[str, list[int]] = defaultdict(list)
        for i, u in enumerate(units):
            self.by_meeting[u.meeting].append(i)
            self.by_project[corpus.docs[u.meeting][0]].append(i)
        self.stats = {project: bm25_stats([self.lexemes[i] for i in ids]) for project, ids in self.by_project.items()}

    def semantic(self, query_vector: np.ndarray, ids: np.ndarray) -> np.ndarray:
        best = np.full(len(self.units), -1.0)
        np.maximum.at(best, self.owner, self.vectors @ query_vector)
        return best[ids]

    def keyword(self, terms: Sequence[str], ids: np.ndarray, project: str) -> np.ndarray:
        return bm25([self.lexemes[i] for i in ids], terms, *self.stats[project])


def bm25_stats(docs: Sequence[dict[str, int]]) -> tuple[dict[str, int], int, float]:
    df: dict[str, int] = defaultdict(int)
    for d in docs:
        for term in d:
            df[term] += 1
    return df, len(docs), sum(sum(d.values()) for d in docs) / max(1, len(docs))


def bm25(docs: Sequence[dict[str, int]], terms: Sequence[str], df: dict[str, int], n: int, avgdl: float) -> np.ndarray:
    scores = np.zeros(len(docs))
    for j, d in enumerate(docs):
        length = sum(d.values())
        for term in terms:
            if tf := d.get(term):
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                scores[j] += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / avgdl))
    return scores


def fuse(sem: np.ndarray, kw: np.ndarray, method: str, share: float) -> np.ndarray:
    if method == "semantic":
        return sem
    if method == "keyword":
        return kw
    s_top = np.argsort(-sem, kind="stable")[:CANDIDATES]
    k_top = np.argsort(-kw, kind="stable")[:CANDIDATES]
    k_top = k_top[kw[k_top] > 0]
    out = np.zeros(len(sem))
    if method == "rrf":
        out[s_top] += 1 / (61 + np.arange(len(s_top)))
        out[k_top] += 1 / (61 + np.arange(len(k_top)))
        return out

    def scaled(x: np.ndarray, ids: np.ndarray) -> np.ndarray:
        low, high = x[ids].min(), x[ids].max()
        return (x[ids] - low) / (high - low) if high > low else np.ones(len(ids))

    out[s_top] += share * scaled(sem, s_top)
    if len(k_top):
        out[k_top] += (1 - share) * scaled(kw, k_top)
    return out


Reranking = Callable[[int, np.ndarray, np.ndarray], np.ndarray]


def evaluate(index: Index, setting: str, method: str, share: float, rerank: Reranking | None = None) -> dict[str, float]:
    corpus = index.corpus
    texts = [search_text(q["query"]) for q in corpus.queries]
    query_vectors, query_terms = corpus.embed(texts), corpus.lexemes(texts)
    rows = []
    for qi, q in enumerate(corpus.queries):
        ids = np.array(index.by_meeting[q["meeting_id"]] if setting == "meeting" else index.by_project[q["domain"]])
        sem = index.semantic(query_vectors[qi], ids)
        kw = index.keyword(list(query_terms[qi]), ids, q["domain"])
        scores = fuse(sem, kw, method, share)
        if rerank is not None:
            scores = rerank(qi, ids, scores)
        top = np.argsort(-scores, kind="stable")[:10]
        hits = [Hit(index.units[ids[o]].meeting, index.units[ids[o]].start_turn, index.units[ids[o]].end_turn) for o in top]
        rows.append((q["domain"], score_query(q["meeting_id"], [tuple(r) for r in q["relevant_turns"]], hits)))
    return aggregate(rows)["overall"]  # type: ignore[return-value]


def meeting_boost(index: Index, top_meetings: int, weight: float) -> Reranking:
    """Two-stage: rank the project's meetings, then add ``weight / (1 + meeting rank)`` to the chunks of the best ones."""
    corpus = index.corpus
    meetings = sorted(index.by_meeting)
    merged = [_merged(index.lexemes[i] for i in index.by_meeting[m]) for m in meetings]
    means = np.stack(
        [index.vectors[[j for j, o in enumerate(index.owner) if o in set(index.by_meeting[m])]].mean(0) for m in meetings]
    )
    means /= np.linalg.norm(means, axis=1, keepdims=True)
    texts = [search_text(q["query"]) for q in corpus.queries]
    query_vectors, query_terms = corpus.embed(texts), corpus.lexemes(texts)

    def rerank(qi: int, ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        project = corpus.queries[qi]["domain"]
        mine = [j for j, m in enumerate(meetings) if corpus.docs[m][0] == project]
        kw = bm25([merged[j] for j in mine], list(query_terms[qi]), *bm25_stats([merged[j] for j in mine]))
        ranked = fuse(means[mine] @ query_vectors[qi], kw, "convex", 0.5)
        rank = {meetings[mine[o]]: r for r, o in enumerate(np.argsort(-ranked)[:top_meetings])}
        bonus = [weight / (1 + rank[index.units[i].meeting]) if index.units[i].meeting in rank else 0.0 for i in ids]
        return scores + np.asarray(bonus)

    return rerank


def _merged(docs: object) -> dict[str, int]:
    total: dict[str, int] = defaultdict(int)
    for d in docs:  # type: ignore[attr-defined]
        for term, tf in d.items():
            total[term] += tf
    return dict(total)


def report(name: str, setting: str, fusion: str, scores: dict[str, float]) -> None:
    print(
        f"{name:34s} {setting:8s} {fusion:12s} MRR {scores['mrr@10']:.3f}  nDCG {scores['ndcg@10']:.3f}"
        f"  R@10 {scores['recall@10']:.3f}  turns/hit {scores['hit_turns@10']:.1f}",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transcripts", type=Path, required=True, help="<project>/<meeting_id>.txt files")
    parser.add_argument(
        "--queries", type=Path, required=True, help="JSON lines with qid, meeting_id, domain, query, relevant_turns"
    )
    parser.add_argument("--variants", default="chunks,windows,two-stage", help="comma separated: chunks, windows, two-stage")
    args = parser.parse_args(argv)
    import psycopg

    with bench_database() as url, psycopg.connect(url) as conn:
        corpus = Corpus(args.transcripts, args.queries, conn)
        variants = args.variants.split(",")
        chunks = Index(corpus, product_chunks(corpus), "single")
        if "chunks" in variants:
            for method, share in FUSIONS:
                for setting in ("meeting", "project"):
                    report("chunks 254/50 (product)", setting, f"{method} {share:g}", evaluate(chunks, setting, method, share))
        if "windows" in variants:
            for stride in (0.5, 1.0):
                units = windows(corpus, 200, stride)
                for scoring in ("single", "max"):
                    index = Index(corpus, units, scoring)
                    for method, share in FUSIONS[2:]:
                        for setting in ("meeting", "project"):
                            name = f"windows 200w stride {stride:g} {scoring}"
                            report(name, setting, f"{method} {share:g}", evaluate(index, setting, method, share))
        if "two-stage" in variants:
            for top_meetings in (1, 3, 5):
                for weight in (0.1, 0.2, 0.4):
                    scores = evaluate(chunks, "project", "convex", 0.5, meeting_boost(chunks, top_meetings, weight))
                    report(f"two-stage top {top_meetings} boost {weight:g}", "project", "convex 0.5", scores)
    return 0


if __name__ == "__main__":
    sys.exit(main())
