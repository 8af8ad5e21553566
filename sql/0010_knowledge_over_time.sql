-- Knowledge that tracks time: what a later meeting changed.
--
-- A decision made later on the same subject supersedes the earlier one (decisions.status
-- current | superseded, superseded_by the decision that replaced it; reversals chain). A task
-- reported done, cancelled, handed over or rescheduled in a later meeting, and a risk said to
-- be closed, change that item's status, owner or due date; each such statement is a row of
-- knowledge_changes that cites where it was said and links to the item it changed.
--
-- The item rows hold the effective values (what the API and search show, what /v1/tasks
-- filters on); ``stated`` keeps the values as the extractor stated them in the item's own
-- meeting, so that the links of a project can be recomputed from scratch whenever one of its
-- meetings is re-ingested, re-extracted or deleted (rag.store.timeline.relink).

ALTER TABLE decisions ADD COLUMN IF NOT EXISTS superseded_by bigint REFERENCES decisions (id) ON DELETE SET NULL;
ALTER TABLE decisions ADD COLUMN IF NOT EXISTS stated jsonb NOT NULL DEFAULT '{}';
-- The extractor's own statuses (proposed, agreed, revisited) give way to current | superseded.
UPDATE decisions SET status = 'current' WHERE status IS DISTINCT FROM 'current' AND superseded_by IS NULL;
ALTER TABLE decisions ALTER COLUMN status SET DEFAULT 'current';

ALTER TABLE risks ADD COLUMN IF NOT EXISTS status text NOT NULL DEFAULT 'open';  -- open | closed
ALTER TABLE risks ADD COLUMN IF NOT EXISTS stated jsonb NOT NULL DEFAULT '{}';

ALTER TABLE tasks ADD COLUMN IF NOT EXISTS stated jsonb NOT NULL DEFAULT '{}';  -- status open | done | cancelled | blocked
UPDATE tasks SET stated = jsonb_build_object('assignee', assignee, 'due_date', due_date, 'status', status)
 WHERE stated = '{}';

CREATE TABLE IF NOT EXISTS knowledge_changes (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    document_id     uuid NOT NULL REFERENCES documents (id) ON DELETE CASCADE,  -- where it was said
    segment_id      bigint REFERENCES segments (id) ON DELETE CASCADE,
    tenant_id       text NOT NULL,
    project_id      text NOT NULL,
    start_turn      integer,
    end_turn        integer,
    start_char      integer NOT NULL,
    end_char        integer NOT NULL,
    speakers        text[] NOT NULL DEFAULT '{}',
    evidence        text NOT NULL,
    context         text,             -- what was said just before (the question a "done" answers)
    change          text NOT NULL,    -- done | cancelled | reassigned | rescheduled | closed
    new_value       text,             -- reassigned: the new owner; rescheduled: the new due date (ISO)
    method          text NOT NULL,    -- rules | llm
    proposed_target text,             -- llm: the description of the earlier item the model named
    target_kind     text,             -- task | risk: what it changed (set by relink; NULL: nothing matched)
    target_id       bigint,
    search_tsv      tsvector GENERATED ALWAYS AS (to_tsvector('english', evidence)) STORED,
    created_at      timestamptz NOT NULL DEFAULT now(),
    CHECK (change IN ('done', 'cancelled', 'reassigned', 'rescheduled', 'closed')),
    CHECK (start_char >= 0 AND end_char >= start_char)
);
CREATE INDEX IF NOT EXISTS knowledge_changes_tenant_project_idx ON knowledge_changes (tenant_id, project_id);
CREATE INDEX IF NOT EXISTS knowledge_changes_document_idx ON knowledge_changes (document_id);
CREATE INDEX IF NOT EXISTS knowledge_changes_target_idx ON knowledge_changes (target_kind, target_id);
