"""PostgreSQL + pgvector: connections, migrations and the repositories."""
