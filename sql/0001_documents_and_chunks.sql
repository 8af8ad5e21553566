-- Documents and their chunks: what ingest writes and search reads.
-- Every row carries tenant_id and project_id; every query filters on them.

CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE IF NOT EXISTS documents (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id       text NOT NULL,
    project_id      text NOT NULL,
    bucket          text NOT NULL,
    object_key      text NOT NULL,
    source_uri      text GENERATED ALWAYS AS ('s3://' || bucket || '/' || object_key) STORED,
    s3_version_id   text,
    etag            text,
    content_sha256  text,
    kind            text CHECK (kind IN ('transcript', 'document')),
    format          text,
    title           text,
    meeting_date    date,
    participants    text[] NOT NULL DEFAULT '{}',
    body            text,            -- the extracted text every start_char/end_char points into
    turns           jsonb,           -- transcripts: [[speaker, start_char, end_char, start_s, end_s], ...]
    status          text NOT NULL CHECK (status IN
                        ('raw_ingested', 'segmented', 'embedded', 'extracted', 'failed')),
    embedding_model text,
    chunk_count     integer NOT NULL DEFAULT 0,
    error           text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (bucket, object_key)
);

CREATE INDEX IF NOT EXISTS documents_tenant_project_idx ON documents (tenant_id, project_id);
CREATE INDEX IF NOT EXISTS documents_status_idx ON documents (status);

CREATE TABLE IF NOT EXISTS chunks (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    document_id     uuid NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    tenant_id       text NOT NULL,
    project_id      text NOT NULL,
    chunk_index     integer NOT NULL,
    content         text NOT NULL,
    token_count     integer NOT NULL,
    start_char      integer NOT NULL,
    end_char        integer NOT NULL,
    start_turn      integer,
    end_turn        integer,
    speakers        text[] NOT NULL DEFAULT '{}',
    start_time      float8,
    end_time        float8,
    heading_path    text[] NOT NULL DEFAULT '{}',
    -- Untyped so that several models (and dimensions) can coexist during a switch;
    -- each model gets its own partial HNSW index on embedding::vector(dim)
    -- (created by the migrate step from configuration), and every search filters
    -- on embedding_model, so vectors of two models are never compared.
    embedding       vector,
    embedding_model text,
    search_tsv      tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
    UNIQUE (document_id, chunk_index),
    CHECK (start_char >= 0 AND end_char >= start_char)
);

CREATE INDEX IF NOT EXISTS chunks_tenant_project_idx ON chunks (tenant_id, project_id);
CREATE INDEX IF NOT EXISTS chunks_search_tsv_idx ON chunks USING gin (search_tsv);
