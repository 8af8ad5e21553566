"""Search over chunks: semantic (pgvector HNSW) for now; keyword and hybrid arrive with the query API."""
