-- POST /v1/ask: the question and answer pair in the query log (mode 'ask'), with the passages the
-- answer cites, the tool calls the model made and the tokens it used. Search rows leave them NULL.
ALTER TABLE query_log
    ADD COLUMN IF NOT EXISTS answer        text,
    ADD COLUMN IF NOT EXISTS answer_mode   text,
    ADD COLUMN IF NOT EXISTS citations     jsonb,
    ADD COLUMN IF NOT EXISTS tool_calls    jsonb,
    ADD COLUMN IF NOT EXISTS input_tokens  integer,
    ADD COLUMN IF NOT EXISTS output_tokens integer;
