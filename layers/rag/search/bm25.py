"""Keyword ranking by BM25 (k1 1.2, b 0.75), as SQL common table expressions that rag.search.engine puts in a search's
statement: from the project's kept statistics (chunks: ``chunk_lexemes`` and ``keyword_stats``) or counted from the
filtered rows' tsvectors at query time (the smaller item tables). Why each: rag.search.engine's docstring.
"""

from __future__ import annotations

BM25_K1 = 1.2
BM25_B = 0.75


QUERY_TERMS = """query_terms AS (
        SELECT DISTINCT term FROM unnest(tsvector_to_array(to_tsvector('english', %(qtext)s))) AS term)"""


def _project_stats_keyword_cte(table: str, where: str, join_documents: str) -> str:
    """Exact BM25 from the chunks' ``search_tsv`` (sql/0009), ``chunk_lexemes`` and the per-project ``keyword_stats``.

    Document frequencies count the project's chunks holding the term, whatever the filter, in
    ``chunk_lexemes`` (GIN index over narrow rows); the filter's matching chunks come from the
    chunks' own GIN index, each one's term frequencies from its tsvector cut down to the query's
    lexemes in C (setweight marks them, ts_filter keeps them) instead of an unnest of all of them.
    """
    projects = "AND x.project_id = ANY(%(projects)s)" if "%(projects)s" in where else ""
    term_query = r"""('''' || replace(replace(q.term, '\', '\\'), '''', '''''') || '''')::tsquery"""
    return f"""{QUERY_TERMS},
    term_idf AS MATERIALIZED (
        SELECT df.project_id, df.term,
               ln(1.0::float8 + (ks.chunk_count - df.df + 0.5::float8) / (df.df + 0.5::float8)) AS idf,
               greatest(ks.total_len::float8 / greatest(ks.chunk_count, 1), 1.0::float8) AS avgdl
        FROM (SELECT x.project_id, q.term, count(*)::float8 AS df
              FROM query_terms q JOIN chunk_lexemes x ON x.lexemes @@ {term_query}
              WHERE x.tenant_id = %(tenant)s {projects}
              GROUP BY x.project_id, q.term) df
        JOIN keyword_stats ks ON ks.tenant_id = %(tenant)s AND ks.project_id = df.project_id),
    matches AS MATERIALIZED (
        SELECT c.id, c.project_id,
               ts_filter(setweight(c.search_tsv, 'A', (SELECT array_agg(term) FROM query_terms)), '{{a}}') AS hits
        FROM {table} c {join_documents}
        WHERE {where} AND c.search_tsv @@ {_OR_TSQUERY}),
    keyword AS (
        SELECT id, score, row_number() OVER (ORDER BY score DESC, id) AS rank FROM (
            SELECT m.id,
                   sum(i.idf * cardinality(t.positions) * ({BM25_K1}::float8 + 1.0::float8)
                       / (cardinality(t.positions) + {BM25_K1}::float8 * (1.0::float8 - {BM25_B}::float8
                          + {BM25_B}::float8 * l.len / i.avgdl))
                   ) AS score
            FROM matches m
            JOIN chunk_lexemes l ON l.chunk_id = m.id
            CROSS JOIN LATERAL unnest(m.hits) AS t
            JOIN term_idf i ON i.project_id = m.project_id AND i.term = t.lexeme
            GROUP BY m.id
            ORDER BY score DESC, m.id LIMIT %(candidates)s) k)"""


# The query's lexemes ORed into one tsquery, each quoted (quotes doubled, backslashes escaped)
# so that no lexeme is read as an operator. NULL when the query has no lexeme: nothing matches.
_OR_TSQUERY = r"""(SELECT string_agg('''' || replace(replace(term, '\', '\\'), '''', '''''') || '''', ' | ')::tsquery
                  FROM query_terms)"""


def _tsvector_keyword_cte(table: str, where: str, join_documents: str) -> str:
    """BM25 from the rows' ``search_tsv``: matches through the GIN index, N and average length from the filter."""
    return f"""{QUERY_TERMS},
    scope_stats AS (
        SELECT count(*)::float8 AS n, coalesce(avg(length(c.search_tsv)), 0)::float8 AS avgdl
        FROM {table} c {join_documents} WHERE {where}),
    matches AS (
        SELECT c.id, t.lexeme AS term, cardinality(t.positions)::float8 AS tf, length(c.search_tsv)::float8 AS len
        FROM {table} c {join_documents} CROSS JOIN LATERAL unnest(c.search_tsv) AS t
        WHERE {where} AND c.search_tsv @@ {_OR_TSQUERY} AND t.lexeme IN (SELECT term FROM query_terms)),
    term_df AS (SELECT term, count(*)::float8 AS df FROM matches GROUP BY term),
    keyword AS (
        SELECT id, score, row_number() OVER (ORDER BY score DESC, id) AS rank FROM (
            SELECT m.id,
                   sum(ln(1.0::float8 + (s.n - df.df + 0.5::float8) / (df.df + 0.5::float8))
                       * m.tf * ({BM25_K1}::float8 + 1.0::float8)
                       / (m.tf + {BM25_K1}::float8 * (1.0::float8 - {BM25_B}::float8
                          + {BM25_B}::float8 * m.len / greatest(s.avgdl, 1.0::float8)))
                   ) AS score
            FROM matches m JOIN term_df df ON df.term = m.term CROSS JOIN scope_stats s
            GROUP BY m.id
            ORDER BY score DESC, m.id LIMIT %(candidates)s) k)"""


KEYWORD_CTES = {"project_stats_bm25": _project_stats_keyword_cte, "tsvector_bm25": _tsvector_keyword_cte}
