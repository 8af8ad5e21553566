-- Vectors of a file that is too large to embed within one ingest invocation: the invocation
-- that runs out of time saves what it embedded here and hands the rest to a new message;
-- the one that finishes writes the document and deletes these rows in the same transaction.
-- Keyed by the exact content and model, so a newer version or another model never reuses them.
CREATE TABLE IF NOT EXISTS ingest_checkpoints (
    bucket          text NOT NULL,
    object_key      text NOT NULL,
    content_sha256  text NOT NULL,
    embedding_model text NOT NULL,
    chunk_index     integer NOT NULL,
    embedding       vector NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bucket, object_key, content_sha256, embedding_model, chunk_index)
);
