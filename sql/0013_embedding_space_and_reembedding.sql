-- Moving the corpus to another embedding model without downtime (rag.reembed, docs/reembedding.md).
--
-- embedding_space names the model the vectors of `embedding` are in (one row). A re-embedding run writes
-- the new model's vectors beside them, in embedding_alt / embedding_alt_model, builds the new model's
-- partial HNSW index over embedding_alt, and then swaps the columns by name in one transaction: the
-- indexes follow their columns, so the new index serves `embedding` from that commit on and searches
-- never compare vectors of two models. The previous model's vectors stay in embedding_alt, unindexed,
-- until the next run overwrites them.

CREATE TABLE IF NOT EXISTS embedding_space (
    singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    model_id    text NOT NULL,
    dimension   integer NOT NULL CHECK (dimension > 0),
    switched_at timestamptz NOT NULL DEFAULT now()
);

-- A database that already holds vectors records the model most of its documents are in.
INSERT INTO embedding_space (model_id, dimension)
SELECT d.embedding_model, (SELECT vector_dims(c.embedding) FROM chunks c
                           WHERE c.embedding_model = d.embedding_model AND c.embedding IS NOT NULL LIMIT 1)
FROM documents d WHERE d.embedding_model IS NOT NULL
GROUP BY d.embedding_model
HAVING EXISTS (SELECT 1 FROM chunks c WHERE c.embedding_model = d.embedding_model AND c.embedding IS NOT NULL)
ORDER BY count(*) DESC LIMIT 1
ON CONFLICT DO NOTHING;

ALTER TABLE chunks ADD COLUMN IF NOT EXISTS embedding_alt vector;
ALTER TABLE chunks ADD COLUMN IF NOT EXISTS embedding_alt_model text;
ALTER TABLE segments ADD COLUMN IF NOT EXISTS embedding_alt vector;
ALTER TABLE segments ADD COLUMN IF NOT EXISTS embedding_alt_model text;
ALTER TABLE decisions ADD COLUMN IF NOT EXISTS embedding_alt vector;
ALTER TABLE decisions ADD COLUMN IF NOT EXISTS embedding_alt_model text;
ALTER TABLE risks ADD COLUMN IF NOT EXISTS embedding_alt vector;
ALTER TABLE risks ADD COLUMN IF NOT EXISTS embedding_alt_model text;
ALTER TABLE opportunities ADD COLUMN IF NOT EXISTS embedding_alt vector;
ALTER TABLE opportunities ADD COLUMN IF NOT EXISTS embedding_alt_model text;
ALTER TABLE tasks ADD COLUMN IF NOT EXISTS embedding_alt vector;
ALTER TABLE tasks ADD COLUMN IF NOT EXISTS embedding_alt_model text;

-- One run at a time: a second planner finds the running one and leaves it alone.
CREATE TABLE IF NOT EXISTS reembed_runs (
    id               text PRIMARY KEY,
    source_model_id  text NOT NULL,
    target_model_id  text NOT NULL,
    target_dimension integer NOT NULL CHECK (target_dimension > 0),
    state            text NOT NULL CHECK (state IN ('running', 'switched', 'failed')),
    manifests        integer NOT NULL DEFAULT 0,
    caught_up        integer NOT NULL DEFAULT 0,
    error            text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX IF NOT EXISTS reembed_runs_one_running_idx ON reembed_runs ((true)) WHERE state = 'running';

-- A run's manifests: which rows each covers, its batch job, and how its import went.
CREATE TABLE IF NOT EXISTS reembed_manifests (
    run_id         text NOT NULL REFERENCES reembed_runs (id) ON DELETE CASCADE,
    manifest       integer NOT NULL,
    table_name     text NOT NULL,
    first_id       bigint NOT NULL,
    last_id        bigint NOT NULL,
    records        integer NOT NULL DEFAULT 0,
    job_arn        text,
    state          text NOT NULL DEFAULT 'planned'
                       CHECK (state IN ('planned', 'submitted', 'completed', 'imported', 'failed')),
    imported       integer NOT NULL DEFAULT 0,
    failed_records integer NOT NULL DEFAULT 0,
    error          text,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, manifest),
    CHECK (first_id <= last_id)
);
