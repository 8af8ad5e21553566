-- One key per speaker for filtering: the label without its trailing qualifiers, whitespace
-- collapsed, lower case ("Sofia Ruiz (PM)" and "SOFIA  RUIZ" are both 'sofia ruiz').
-- speakers keeps the labels as written (what results show); speaker_keys is what a speaker
-- filter compares, after folding the filter's names with the same function.
--
-- speaker_key is rag.backfill.owners.clean_label, lower-cased (tests/store/test_speaker_keys.py
-- holds them to the same answers). The columns are generated: every writer fills them, and this
-- migration fills the rows already there. A changed folding needs a new migration that rewrites them.

CREATE OR REPLACE FUNCTION speaker_key(label text) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    name text := btrim(regexp_replace(label, '\s+', ' ', 'g'));
    stripped text;
BEGIN
    -- A trailing "(Firmware)" or "[Contoso]", one at a time, as long as a name remains.
    LOOP
        stripped := regexp_replace(name, '\s*[([][^])]*[])]\s*$', '');
        EXIT WHEN stripped = name OR stripped = '';
        name := stripped;
    END LOOP;
    RETURN lower(name);
END
$$;

CREATE OR REPLACE FUNCTION speaker_keys(labels text[]) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(DISTINCT k ORDER BY k), '{}')
    FROM (SELECT speaker_key(label) AS k FROM unnest(labels) AS label) AS keys
    WHERE k <> ''
$$;

ALTER TABLE chunks ADD COLUMN IF NOT EXISTS speaker_keys text[] GENERATED ALWAYS AS (speaker_keys(speakers)) STORED;
ALTER TABLE segments ADD COLUMN IF NOT EXISTS speaker_keys text[] GENERATED ALWAYS AS (speaker_keys(speakers)) STORED;
ALTER TABLE decisions ADD COLUMN IF NOT EXISTS speaker_keys text[] GENERATED ALWAYS AS (speaker_keys(speakers)) STORED;
ALTER TABLE risks ADD COLUMN IF NOT EXISTS speaker_keys text[] GENERATED ALWAYS AS (speaker_keys(speakers)) STORED;
ALTER TABLE opportunities ADD COLUMN IF NOT EXISTS speaker_keys text[] GENERATED ALWAYS AS (speaker_keys(speakers)) STORED;
ALTER TABLE tasks ADD COLUMN IF NOT EXISTS speaker_keys text[] GENERATED ALWAYS AS (speaker_keys(speakers)) STORED;

-- Chunks are the large table: a speaker filter over a whole tenant finds its rows here. The item
-- tables hold a handful of rows per meeting and are filtered by tenant and project first.
CREATE INDEX IF NOT EXISTS chunks_speaker_keys_idx ON chunks USING gin (speaker_keys);
