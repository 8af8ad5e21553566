"""One construct per concern (storage, database, ingest, query, backfill, monitoring)."""
