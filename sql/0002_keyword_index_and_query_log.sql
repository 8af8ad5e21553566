-- BM25 keyword search inside PostgreSQL, and the query log.
--
-- chunk_terms is a postings table: one row per (chunk, lexeme) with the term frequency
-- and the chunk's length, taken from the chunk's english tsvector at ingest (same
-- stemming and stop words as PostgreSQL full-text search). keyword_stats keeps, per
-- tenant and project, the chunk count and the summed lengths (BM25's N and avgdl);
-- document frequencies are counted at query time from the covering index, so
-- concurrent ingests never contend on per-term counters.

CREATE TABLE IF NOT EXISTS chunk_terms (
    tenant_id   text    NOT NULL,
    project_id  text    NOT NULL,
    term        text    NOT NULL,
    chunk_id    bigint  NOT NULL REFERENCES chunks (id) ON DELETE CASCADE,
    document_id uuid    NOT NULL,
    tf          integer NOT NULL,
    chunk_len   integer NOT NULL,
    PRIMARY KEY (tenant_id, project_id, term, chunk_id)
) WITH (fillfactor = 90);

-- Deleting a document's chunks cascades here; this index makes that cheap.
CREATE INDEX IF NOT EXISTS chunk_terms_chunk_idx ON chunk_terms (chunk_id);

CREATE TABLE IF NOT EXISTS keyword_stats (
    tenant_id   text   NOT NULL,
    project_id  text   NOT NULL,
    chunk_count bigint NOT NULL DEFAULT 0,
    total_len   bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, project_id)
);

CREATE TABLE IF NOT EXISTS query_log (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id       text        NOT NULL,
    query           text        NOT NULL,
    mode            text        NOT NULL,
    types           text[]      NOT NULL,
    filters         jsonb       NOT NULL DEFAULT '{}',
    result_count    integer     NOT NULL,
    top_similarity  float8,
    mean_similarity float8,
    latency_ms      float8      NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX IF NOT EXISTS query_log_tenant_time_idx ON query_log (tenant_id, created_at);

-- Query embeddings, keyed by model and normalized query text; rows older than the
-- TTL are ignored and overwritten.
CREATE TABLE IF NOT EXISTS query_embedding_cache (
    model      text        NOT NULL,
    query      text        NOT NULL,
    embedding  vector      NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (model, query)
);

-- Postings and statistics for chunks ingested before this migration.
INSERT INTO chunk_terms (tenant_id, project_id, term, chunk_id, document_id, tf, chunk_len)
SELECT c.tenant_id, c.project_id, t.lexeme, c.id, c.document_id, cardinality(t.positions),
       sum(cardinality(t.positions)) OVER (PARTITION BY c.id)
FROM chunks c CROSS JOIN LATERAL unnest(c.search_tsv) AS t
ON CONFLICT DO NOTHING;

INSERT INTO keyword_stats (tenant_id, project_id, chunk_count, total_len)
SELECT tenant_id, project_id, count(DISTINCT chunk_id), sum(tf) FROM chunk_terms GROUP BY 1, 2
ON CONFLICT (tenant_id, project_id) DO UPDATE
SET chunk_count = EXCLUDED.chunk_count, total_len = EXCLUDED.total_len;
