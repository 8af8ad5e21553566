"""``rag eval``: retrieval quality of the real ingest and query paths on graded meeting transcripts."""
