"""Which ranked passages are evidence for an answer: the hybrid search's hits that hold the question's words or meaning.

A cosine between a question and a whole chunk is a weak test on its own: a chunk on three
subjects is far from a question on one of them, even when it holds the answer word for word
("What did we decide about the cutover?" and "Then we decided: cutover stays on Thursday"
in a chunk about billing, on-call and an office move). Both sides of the hybrid search count:
a passage's evidence score is

    cosine similarity + term coverage

where term coverage is the share of the question's terms (meeting words dropped, as the
search does) that the passage contains, each weighted by its IDF over the scope's chunks. A
term no passage of the scope has weighs most, so a question about something never discussed
("snowmobile trails") is not covered by the words it shares with everything ("committee",
"decide"). Words that say what kind of statement is asked for rather than its subject
("decide", "decision", "conclude", "agree": the meeting may say "we'll go with") are left out,
as the search leaves out words about the meeting itself. A passage is evidence when its score reaches ``ask_min_evidence``, calibrated on
../shared/eval: answerable questions must find evidence, questions no meeting discussed
(``eval/unanswerable.jsonl``) must not (README, "Asking"; ``rag eval --asking``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psycopg

    from rag.search.engine import Hit

# Stems of words naming the kind of statement asked for (a decision), not what it is about.
STATEMENT_LEXEMES = frozenset({"decid", "decis", "conclud", "conclus", "agre", "agreement"})
# Document frequency of each of the query's lexemes among the scope's chunks, and the chunk count.
_TERM_STATISTICS = """
WITH terms AS (SELECT DISTINCT term FROM unnest(tsvector_to_array(to_tsvector('english', %(query)s))) AS term)
SELECT t.term,
       (SELECT count(*) FROM chunk_lexemes x
        WHERE x.tenant_id = %(tenant)s AND (%(every)s OR x.project_id = ANY(%(projects)s))
          AND x.lexemes @@ ('''' || replace(replace(t.term, '\\', '\\\\'), '''', '''''') || '''')::tsquery)::float8,
       (SELECT coalesce(sum(chunk_count), 0) FROM keyword_stats
        WHERE tenant_id = %(tenant)s AND (%(every)s OR project_id = ANY(%(projects)s)))::float8
FROM terms t"""
_LEXEMES = """SELECT coalesce(tsvector_to_array(to_tsvector('english', body)), '{}')
              FROM unnest(%(bodies)s::text[]) WITH ORDINALITY AS b(body, i) ORDER BY i"""


def term_weights(conn: psycopg.Connection, tenant_id: str, project_ids: Sequence[str], query: str) -> dict[str, float]:
    """Each lexeme of ``query`` (but ``STATEMENT_LEXEMES``) and its BM25 IDF over the scope's chunks (one no chunk has weighs most)."""
    params = {"query": query, "tenant": tenant_id, "every": not project_ids, "projects": list(project_ids)}
    weights = {}
    for term, df, n in conn.execute(_TERM_STATISTICS, params, prepare=False).fetchall():
        if term in STATEMENT_LEXEMES:
            continue
        weights[term] = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
    return weights


def term_coverage(conn: psycopg.Connection, weights: dict[str, float], texts: Sequence[str]) -> list[float]:
    """For each text, the IDF-weighted share of the query's lexemes it contains (0 when the query has none)."""
    total = sum(weights.values())
    if not texts or total <= 0:
        return [0.0] * len(texts)
    rows = conn.execute(_LEXEMES, {"bodies": list(texts)}, prepare=False).fetchall()
    return [sum(w for term, w in weights.items() if term in set(lexemes)) / total for (lexemes,) in rows]


def evidence(
    conn: psycopg.Connection,
    tenant_id: str,
    project_ids: Sequence[str],
    query: str,
    ranked: list[tuple[str, Hit]],
    floor: float,
) -> list[tuple[str, Hit]]:
    """The hits of ``ranked`` (in its order) whose similarity plus term coverage of ``query`` reaches ``floor``."""
    similarities = [hit.similarity or 0.0 for _, hit in ranked]
    if all(similarity >= floor for similarity in similarities):
        return ranked  # close enough in meaning alone: no need to count words
    weights = term_weights(conn, tenant_id, project_ids, query)
    coverage = term_coverage(conn, weights, [hit.content for _, hit in ranked])
    return [pair for pair, similarity, covered in zip(ranked, similarities, coverage) if similarity + covered >= floor]
