-- BM25 over the chunks' own tsvectors instead of a postings table (issue 15, items 3 and 4).
--
-- chunk_terms held one row per (chunk, lexeme): 54-58 rows per chunk, about 8.6 KB per chunk
-- of table and indexes, and most of the cost of a document write (a row, two index entries
-- and a foreign-key check per posting). Everything it held is already in chunks.search_tsv and
-- its GIN index: which chunks of a search's filter contain a query term, and the term
-- frequency (the number of the lexeme's positions in the tsvector).
--
-- chunk_lexemes keeps, one narrow row per chunk with at least one term, what the tsvector
-- cannot give cheaply: the chunk's length in terms (the sum of its lexemes' positions, an
-- unnest per chunk) and its lexemes without positions under a GIN index of their own, so that
-- a document frequency (the project's chunks holding a term, whatever the search's filter) is
-- counted over about 600-byte rows instead of the chunks' 3.5 KB ones. Written in the
-- transaction that writes the chunk; removed with it (ON DELETE CASCADE). keyword_stats (per
-- project: chunk count, summed lengths) is unchanged and recomputed below.
--
-- Idempotent: the rows are upserted from the tsvectors, the statistics recomputed from them,
-- and chunk_terms dropped if it is still there.

CREATE TABLE IF NOT EXISTS chunk_lexemes (
    chunk_id   bigint   PRIMARY KEY REFERENCES chunks (id) ON DELETE CASCADE,
    tenant_id  text     NOT NULL,
    project_id text     NOT NULL,
    len        integer  NOT NULL CHECK (len > 0),
    lexemes    tsvector NOT NULL  -- strip(chunks.search_tsv): the lexemes, no positions
);

CREATE INDEX IF NOT EXISTS chunk_lexemes_lexemes_idx ON chunk_lexemes USING gin (lexemes);

INSERT INTO chunk_lexemes (chunk_id, tenant_id, project_id, len, lexemes)
SELECT c.id, c.tenant_id, c.project_id, l.len, strip(c.search_tsv)
FROM chunks c CROSS JOIN LATERAL (SELECT sum(cardinality(t.positions))::integer AS len FROM unnest(c.search_tsv) AS t) l
WHERE l.len > 0
ON CONFLICT (chunk_id) DO UPDATE
SET tenant_id = EXCLUDED.tenant_id, project_id = EXCLUDED.project_id, len = EXCLUDED.len, lexemes = EXCLUDED.lexemes;

TRUNCATE keyword_stats;
INSERT INTO keyword_stats (tenant_id, project_id, chunk_count, total_len)
SELECT tenant_id, project_id, count(*), sum(len) FROM chunk_lexemes GROUP BY tenant_id, project_id;

DROP TABLE IF EXISTS chunk_terms;
