"""Query embeddings are cached twice: an LRU in the warm process and a table with a TTL.

Keyed by model and normalized query text, so "What was decided?" and
"what was  decided?" share one vector. Vectors are pgvector's ``Vector`` (what the connection's loader returns
and its dumper sends): numpy is not a runtime dependency, and the Lambda layer has none.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psycopg
    from pgvector import Vector

    from rag.embedding.base import Embedder
    from rag.store.replica import WriterSource

LRU_SIZE = 1024


def normalize_query(text: str) -> str:
    return " ".join(text.lower().split())


class QueryEmbeddingCache:
    def __init__(self, size: int = LRU_SIZE):
        self.size = size
        self._lru: OrderedDict[tuple[str, str], Vector] = OrderedDict()
        self._lock = threading.Lock()  # the local API and worker share one process; Lambda does not need it

    def vector(
        self, conn: psycopg.Connection, embedder: Embedder, text: str, *, ttl_minutes: int = 60,
        writer: WriterSource | None = None,
    ) -> Vector:  # fmt: skip
        """The query's vector: from this process's LRU, else the shared table (rows younger than ``ttl_minutes``),
        else embedded and stored (on ``writer`` when ``conn`` is a read replica)."""
        from pgvector import Vector

        key = (embedder.model_id, normalize_query(text))
        with self._lock:
            if key in self._lru:
                self._lru.move_to_end(key)
                return self._lru[key]
        row = conn.execute(
            """SELECT embedding FROM query_embedding_cache
               WHERE model = %s AND query = %s AND created_at > now() - make_interval(mins => %s)""",
            (key[0], key[1], ttl_minutes),
        ).fetchone()
        vector: Vector
        if row is not None:
            vector = row[0]  # the connection's pgvector loader makes it a Vector
        else:
            vector = Vector([float(v) for v in embedder.embed([key[1]])[0]])
            (writer() if writer else conn).execute(
                """INSERT INTO query_embedding_cache (model, query, embedding) VALUES (%s, %s, %s)
                   ON CONFLICT (model, query) DO UPDATE SET embedding = EXCLUDED.embedding, created_at = now()""",
                (key[0], key[1], vector),
            )
        with self._lock:
            self._lru[key] = vector
            if len(self._lru) > self.size:
                self._lru.popitem(last=False)
        return vector
