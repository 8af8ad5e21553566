-- The people of each document, folded as sql/0011 folds speakers: its turns' speakers and its
-- participants, one row per document. A speaker filter joins a partial name with the one person
-- of the searched projects it names ("Dana" and "Dana Kim", rag.search.speakers) from these rows,
-- not from the chunks. Generated: every write of turns or participants keeps it, and this
-- migration fills the documents already there.

CREATE OR REPLACE FUNCTION turn_speakers(turns jsonb) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    -- turns: [[speaker, start_char, end_char, start_s, end_s], ...] (sql/0001)
    SELECT CASE WHEN jsonb_typeof(turns) = 'array'
                THEN ARRAY(SELECT t ->> 0 FROM jsonb_array_elements(turns) AS t WHERE jsonb_typeof(t) = 'array')
                ELSE '{}'::text[] END
$$;

ALTER TABLE documents ADD COLUMN IF NOT EXISTS speaker_keys text[]
    GENERATED ALWAYS AS (speaker_keys(participants || turn_speakers(turns))) STORED;
