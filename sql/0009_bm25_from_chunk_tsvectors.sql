-- BM25 over the chunks' own tsvectors instead of a postings table (issue 15, items 3 and 4).
--
-- chunk_terms held one row per (chunk, lexeme): 54-58 rows per chunk, about 8 KB per chunk of
-- table and indexes, and most of the cost of a document write (a row, two index entries and
-- a foreign-key check per posting). Everything it held is already in chunks.search_tsv and
-- its GIN index: which chunks contain a lexeme (the GIN index), the term frequency (the
-- number of positions of the lexeme in the tsvector) and the document frequency (a count of
-- the project's chunks whose tsvector contains the lexeme). What the tsvector cannot give
-- cheaply is a chunk's length in terms (the sum of its lexemes' positions: an unnest per
-- chunk), so that is kept here, one small row per chunk with at least one term, written in
-- the transaction that writes the chunk. keyword_stats (per project: chunk count, summed
-- lengths) is unchanged and recomputed below.
--
-- Idempotent: the lengths are upserted from the tsvectors, the statistics recomputed from
-- them, and chunk_terms dropped if it is still there.

CREATE TABLE IF NOT EXISTS chunk_lengths (
    chunk_id bigint  PRIMARY KEY REFERENCES chunks (id) ON DELETE CASCADE,
    len      integer NOT NULL CHECK (len > 0)
);

INSERT INTO chunk_lengths (chunk_id, len)
SELECT c.id, l.len
FROM chunks c CROSS JOIN LATERAL (SELECT sum(cardinality(t.positions))::integer AS len FROM unnest(c.search_tsv) AS t) l
WHERE l.len > 0
ON CONFLICT (chunk_id) DO UPDATE SET len = EXCLUDED.len;

TRUNCATE keyword_stats;
INSERT INTO keyword_stats (tenant_id, project_id, chunk_count, total_len)
SELECT c.tenant_id, c.project_id, count(*), sum(l.len)
FROM chunks c JOIN chunk_lengths l ON l.chunk_id = c.id
GROUP BY c.tenant_id, c.project_id;

DROP TABLE IF EXISTS chunk_terms;
