-- Transcript markers ({disfmarker}, {vocalsound}, [laughter], (crosstalk) ...) are not
-- words anyone said: the keyword side indexes the text without them, as the embedding
-- side does (rag.index_text; the pattern below is rag.index_text.MARKER_PATTERN and a
-- test checks that both agree). Stored text keeps them, so offsets stay exact.

CREATE OR REPLACE FUNCTION index_text(content text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN regexp_replace(
        content,
        '\{[a-z_]+\}|[\[(](?:applause|background noise|blank_audio|coughs?|coughing|crosstalk|cross-talk|inaudible|indiscernible|laughs?|laughing|laughter|music|noise|pause|silence|sighs?|unintelligible)[\])]',
        ' ', 'gi');

-- Generated columns take a new expression in place (PostgreSQL 17+); each table is rewritten once.
ALTER TABLE chunks ALTER COLUMN search_tsv SET EXPRESSION AS (to_tsvector('english', index_text(content)));
ALTER TABLE segments ALTER COLUMN search_tsv SET EXPRESSION AS
    (to_tsvector('english', index_text(title || ' ' || summary)));
ALTER TABLE decisions ALTER COLUMN search_tsv SET EXPRESSION AS
    (to_tsvector('english', index_text(description || ' ' || coalesce(rationale, ''))));
ALTER TABLE risks ALTER COLUMN search_tsv SET EXPRESSION AS
    (to_tsvector('english', index_text(description || ' ' || coalesce(mitigation, ''))));
ALTER TABLE opportunities ALTER COLUMN search_tsv SET EXPRESSION AS
    (to_tsvector('english', index_text(description || ' ' || coalesce(next_step, ''))));
ALTER TABLE tasks ALTER COLUMN search_tsv SET EXPRESSION AS (to_tsvector('english', index_text(description)));

-- The BM25 postings and statistics follow the chunks' new tsvectors.
TRUNCATE chunk_terms, keyword_stats;
INSERT INTO chunk_terms (tenant_id, project_id, term, chunk_id, document_id, tf, chunk_len)
SELECT c.tenant_id, c.project_id, t.lexeme, c.id, c.document_id, cardinality(t.positions),
       sum(cardinality(t.positions)) OVER (PARTITION BY c.id)
FROM chunks c CROSS JOIN LATERAL unnest(c.search_tsv) AS t;
INSERT INTO keyword_stats (tenant_id, project_id, chunk_count, total_len)
SELECT tenant_id, project_id, count(DISTINCT chunk_id), sum(tf) FROM chunk_terms GROUP BY 1, 2;
