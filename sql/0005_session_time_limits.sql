-- Every session of this database is bounded in time, whoever opens it: a runaway statement
-- is cancelled, and a client that dies (or hangs) inside a transaction releases its locks.
-- Set on the database rather than per connection: SET on a session pins it to one backend
-- behind RDS Proxy, a database default does not. Work that needs longer says so with
-- SET LOCAL (the write path, bulk loads, index builds).
DO $$
BEGIN
    EXECUTE format('ALTER DATABASE %I SET statement_timeout = %L', current_database(), '30s');
    EXECUTE format('ALTER DATABASE %I SET idle_in_transaction_session_timeout = %L', current_database(), '60s');
EXCEPTION WHEN insufficient_privilege THEN
    RAISE WARNING 'not the owner of database %: statement_timeout and idle_in_transaction_session_timeout left as they are', current_database();
END
$$;
