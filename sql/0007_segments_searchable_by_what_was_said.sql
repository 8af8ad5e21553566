-- A segment is found by any word said in it, not only by its title and summary: its
-- tsvector covers the title, the summary and the segment's own text from documents.body.
-- A generated column cannot read another table, so search_tsv becomes a plain column
-- kept by a trigger (whoever writes a segment, its tsvector follows), and this migration
-- fills it for the segments already there.
--
-- The text is capped at 500,000 characters (about 80,000 words, a ten-hour meeting):
-- a tsvector holds at most 1 MB, and a segment's text is bounded by nothing else.

CREATE OR REPLACE FUNCTION segment_search_tsv(title text, summary text, spoken text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN to_tsvector('english', index_text(title || ' ' || summary || ' ' || left(coalesce(spoken, ''), 500000)));

ALTER TABLE segments ALTER COLUMN search_tsv DROP EXPRESSION IF EXISTS;

CREATE OR REPLACE FUNCTION segments_set_search_tsv() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    NEW.search_tsv := segment_search_tsv(
        NEW.title, NEW.summary,
        (SELECT substr(d.body, NEW.start_char + 1, NEW.end_char - NEW.start_char)
         FROM documents d WHERE d.id = NEW.document_id));
    RETURN NEW;
END $$;

CREATE OR REPLACE TRIGGER segments_search_tsv
    BEFORE INSERT OR UPDATE OF title, summary, start_char, end_char ON segments
    FOR EACH ROW EXECUTE FUNCTION segments_set_search_tsv();

-- The trigger computes the tsvector of every segment already there.
UPDATE segments SET title = title;
