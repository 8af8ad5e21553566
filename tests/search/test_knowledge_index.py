"""A large knowledge table is searched through its per-model HNSW index; a small filtered set still gets an exact top-k."""

from __future__ import annotations

import numpy as np
import pytest

from rag.search.engine import SearchScope, search_statement, search_type, set_search_options
from rag.search.types import SEARCHABLE_TYPES
from rag.store.connection import connect
from rag.store.migrations import embedding_index_name, ensure_embedding_index
from tests.search.knowledge_rows import insert_document

MODEL, DIM = "test/synthetic-384", 384
N_ROWS, TINY = 6000, 60  # project "tiny" holds 1% of the decisions
DECISIONS = SEARCHABLE_TYPES["decision"]


def clustered(n: int, seed: int) -> np.ndarray:
    """Unit vectors around 50 centres: neighbourhoods like text embeddings have (random ones have none)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((50, DIM), dtype=np.float32)
    vectors = centres[rng.integers(0, 50, n)] + 0.4 * rng.standard_normal((n, DIM), dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def decisions(database_url):
    conn = connect(database_url)
    conn.execute("TRUNCATE documents CASCADE")
    document = insert_document(conn, "t1", "big", "projects/big/minutes.txt")
    vectors = clustered(N_ROWS, seed=3)
    index = embedding_index_name("decisions", MODEL, DIM)
    conn.execute(f'DROP INDEX IF EXISTS "{index}"')  # COPY first, build once (as rag.store.bulk does)
    with conn.cursor().copy(
        "COPY decisions (document_id, tenant_id, project_id, start_char, end_char, description, method,"
        " embedding, embedding_model) FROM STDIN"
    ) as copy:
        for i, vector in enumerate(vectors):
            project = "tiny" if i < TINY else "big"
            text = "[" + ",".join(f"{x:.6f}" for x in vector) + "]"
            copy.write_row((document, "t1", project, 0, 10, f"decision number {i}", "rules", text, MODEL))
    ensure_embedding_index(conn, "decisions", MODEL, DIM)
    conn.execute("ANALYZE decisions")
    yield conn, vectors
    conn.execute("TRUNCATE documents CASCADE")
    conn.execute(f'DROP INDEX IF EXISTS "{index}"')
    conn.close()


def explain(conn, scope: SearchScope, vector: np.ndarray, mode: str = "semantic") -> str:
    statement, params = search_statement(
        DECISIONS, scope, mode=mode, query="decision", query_vector=vector, model_id=MODEL, dimension=DIM, top_k=10
    )
    with conn.transaction():
        set_search_options(conn)
        return "\n".join(row[0] for row in conn.execute("EXPLAIN " + statement, params, prepare=False))


def test_the_hnsw_index_serves_a_large_knowledge_table(decisions):
    conn, vectors = decisions
    query = clustered(1, seed=11)[0]
    index = embedding_index_name("decisions", MODEL, DIM)
    assert index in explain(conn, SearchScope("t1"), query)
    assert index in explain(conn, SearchScope("t1", ("big",)), query)
    assert index in explain(conn, SearchScope("t1", ("big",)), query, mode="hybrid")
    target = 4321  # a row's own vector: the index must lead to that row first
    hits = search_type(conn, DECISIONS, SearchScope("t1", ("big",)), mode="semantic", query="",
                       query_vector=vectors[target], model_id=MODEL, dimension=DIM, top_k=10)  # fmt: skip
    assert len(hits) == 10 and {h.project_id for h in hits} == {"big"}
    assert hits[0].content == f"decision number {target}" and hits[0].similarity == pytest.approx(1.0, abs=1e-5)


def test_a_filter_matching_one_percent_still_returns_the_exact_top_k(decisions):
    conn, vectors = decisions
    query = clustered(1, seed=12)[0]
    hits = search_type(conn, DECISIONS, SearchScope("t1", ("tiny",)), mode="semantic", query="", query_vector=query,
                       model_id=MODEL, dimension=DIM, top_k=10)  # fmt: skip
    exact = np.argsort(-(vectors[:TINY] @ query))[:10]
    assert [int(h.content.rsplit(" ", 1)[1]) for h in hits] == [int(i) for i in exact]
    assert {h.project_id for h in hits} == {"tiny"}


def test_the_gin_index_serves_keyword_search_on_a_large_table(decisions):
    conn, _ = decisions
    plan = explain(conn, SearchScope("t1", ("big",)), None, mode="keyword")
    assert "decisions_search_tsv_idx" in plan
