-- A new date promised in a later meeting ("I'll have it to Northfield by the 25th") moves a task
-- only when its speaker owes the task and the task was due around that meeting; a date moved in so
-- many words ("we push the survey to the 20th") moves it whatever the task's date was. The flag
-- tells the two apart when a project's links are recomputed (rag.store.timeline.relink).

ALTER TABLE knowledge_changes ADD COLUMN IF NOT EXISTS promised boolean NOT NULL DEFAULT false;
