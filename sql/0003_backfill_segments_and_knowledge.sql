-- The staged backfill: topic segments of each document and the knowledge extracted
-- from them (decisions, risks, opportunities, tasks).
--
-- Pipeline: documents.status raw_ingested -> segmented -> embedded -> extracted.
-- A stage claims documents with FOR UPDATE SKIP LOCKED; backfill_error records the
-- last per-document failure of a stage without stopping the batch, and
-- backfill_attempts keeps a document that always fails from being claimed forever.
-- Every row carries tenant_id and project_id; every query filters on them.
-- Vectors are untyped like chunks.embedding: each model gets its own partial HNSW
-- index (created by the migrate step), and searches filter on embedding_model.

ALTER TABLE documents ADD COLUMN IF NOT EXISTS backfill_error text;
ALTER TABLE documents ADD COLUMN IF NOT EXISTS backfill_attempts integer NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS documents_backfill_queue_idx ON documents (status, updated_at)
    WHERE status IN ('raw_ingested', 'segmented', 'embedded');

CREATE TABLE IF NOT EXISTS segments (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    document_id     uuid NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    tenant_id       text NOT NULL,
    project_id      text NOT NULL,
    segment_index   integer NOT NULL,
    title           text NOT NULL,
    summary         text NOT NULL,
    start_turn      integer,          -- transcripts: inclusive turn range
    end_turn        integer,
    start_char      integer NOT NULL, -- into documents.body
    end_char        integer NOT NULL,
    speakers        text[] NOT NULL DEFAULT '{}',
    heading_path    text[] NOT NULL DEFAULT '{}',  -- documents: the section's headings
    method          text NOT NULL,    -- llm | texttiling | headings
    embedding       vector,
    embedding_model text,
    search_tsv      tsvector GENERATED ALWAYS AS
                        (to_tsvector('english', title || ' ' || summary)) STORED,
    created_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (document_id, segment_index),
    CHECK (start_char >= 0 AND end_char >= start_char)
);
CREATE INDEX IF NOT EXISTS segments_tenant_project_idx ON segments (tenant_id, project_id);
CREATE INDEX IF NOT EXISTS segments_search_tsv_idx ON segments USING gin (search_tsv);

-- Columns shared by the four knowledge tables: where the item came from and how to find it.
--   document_id, segment_id, tenant_id, project_id, start_turn/end_turn (inclusive),
--   start_char/end_char (into documents.body), speakers, description,
--   evidence (the words it was taken from), method (llm | rules), embedding(+model), search_tsv.

CREATE TABLE IF NOT EXISTS decisions (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    document_id     uuid NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    segment_id      bigint REFERENCES segments (id) ON DELETE CASCADE,
    tenant_id       text NOT NULL,
    project_id      text NOT NULL,
    start_turn      integer,
    end_turn        integer,
    start_char      integer NOT NULL,
    end_char        integer NOT NULL,
    speakers        text[] NOT NULL DEFAULT '{}',
    description     text NOT NULL,
    evidence        text,
    method          text NOT NULL,
    rationale       text,
    owner           text,
    impact          text,
    status          text,             -- proposed | agreed | revisited ...
    embedding       vector,
    embedding_model text,
    search_tsv      tsvector GENERATED ALWAYS AS
                        (to_tsvector('english', description || ' ' || coalesce(rationale, ''))) STORED,
    created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS risks (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    document_id     uuid NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    segment_id      bigint REFERENCES segments (id) ON DELETE CASCADE,
    tenant_id       text NOT NULL,
    project_id      text NOT NULL,
    start_turn      integer,
    end_turn        integer,
    start_char      integer NOT NULL,
    end_char        integer NOT NULL,
    speakers        text[] NOT NULL DEFAULT '{}',
    description     text NOT NULL,
    evidence        text,
    method          text NOT NULL,
    category        text,
    likelihood      text,             -- low | medium | high
    impact          text,
    mitigation      text,
    embedding       vector,
    embedding_model text,
    search_tsv      tsvector GENERATED ALWAYS AS
                        (to_tsvector('english', description || ' ' || coalesce(mitigation, ''))) STORED,
    created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS opportunities (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    document_id     uuid NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    segment_id      bigint REFERENCES segments (id) ON DELETE CASCADE,
    tenant_id       text NOT NULL,
    project_id      text NOT NULL,
    start_turn      integer,
    end_turn        integer,
    start_char      integer NOT NULL,
    end_char        integer NOT NULL,
    speakers        text[] NOT NULL DEFAULT '{}',
    description     text NOT NULL,
    evidence        text,
    method          text NOT NULL,
    type            text,
    owner           text,
    next_step       text,
    embedding       vector,
    embedding_model text,
    search_tsv      tsvector GENERATED ALWAYS AS
                        (to_tsvector('english', description || ' ' || coalesce(next_step, ''))) STORED,
    created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS tasks (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    document_id     uuid NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    segment_id      bigint REFERENCES segments (id) ON DELETE CASCADE,
    tenant_id       text NOT NULL,
    project_id      text NOT NULL,
    start_turn      integer,
    end_turn        integer,
    start_char      integer NOT NULL,
    end_char        integer NOT NULL,
    speakers        text[] NOT NULL DEFAULT '{}',
    description     text NOT NULL,
    evidence        text,
    method          text NOT NULL,
    assignee        text,
    due_date        date,
    status          text NOT NULL DEFAULT 'open',  -- open | done | blocked
    embedding       vector,
    embedding_model text,
    search_tsv      tsvector GENERATED ALWAYS AS (to_tsvector('english', description)) STORED,
    created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX IF NOT EXISTS decisions_tenant_project_idx ON decisions (tenant_id, project_id);
CREATE INDEX IF NOT EXISTS decisions_document_idx ON decisions (document_id);
CREATE INDEX IF NOT EXISTS decisions_search_tsv_idx ON decisions USING gin (search_tsv);
CREATE INDEX IF NOT EXISTS risks_tenant_project_idx ON risks (tenant_id, project_id);
CREATE INDEX IF NOT EXISTS risks_document_idx ON risks (document_id);
CREATE INDEX IF NOT EXISTS risks_search_tsv_idx ON risks USING gin (search_tsv);
CREATE INDEX IF NOT EXISTS opportunities_tenant_project_idx ON opportunities (tenant_id, project_id);
CREATE INDEX IF NOT EXISTS opportunities_document_idx ON opportunities (document_id);
CREATE INDEX IF NOT EXISTS opportunities_search_tsv_idx ON opportunities USING gin (search_tsv);
CREATE INDEX IF NOT EXISTS tasks_tenant_project_status_idx ON tasks (tenant_id, project_id, status);
CREATE INDEX IF NOT EXISTS tasks_document_idx ON tasks (document_id);
CREATE INDEX IF NOT EXISTS tasks_search_tsv_idx ON tasks USING gin (search_tsv);
