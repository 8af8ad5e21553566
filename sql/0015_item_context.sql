-- What was said just before a transcript's task or decision, as the extract stage found it. A task whose
-- own words say nothing of what it is ("I'll take it.", "Can you draft that in two weeks?") is about that
-- when a later meeting reports it done ("The comms plan went out on the 1st"); a decision that changes an
-- earlier one ("We switch to Pedalink") is linked to it by the words around either ("we can't make June
-- with Urbanvolt"). Read when a project's links are recomputed (rag.store.timeline.relink); NULL for notes
-- and documents, and for rows written before.

ALTER TABLE tasks ADD COLUMN IF NOT EXISTS context text;
ALTER TABLE decisions ADD COLUMN IF NOT EXISTS context text;
