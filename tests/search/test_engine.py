"""The search statements on synthetic vectors: filtered top-k, index use, exact BM25, fusion."""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np
import pytest

from rag.parsing.model import Chunk, ParsedDocument
from rag.search.engine import SearchScope, chunk_search_statement, search_chunks, search_types, set_search_options
from rag.search.scope_size import ScopeSize, scope_size
from rag.store import documents as repo
from rag.store.bulk import DocumentLoad, bulk_load
from rag.store.connection import connect
from rag.store.migrations import embedding_index_name

MODEL, DIM = "test/synthetic-384", 384
N_DOCS, CHUNKS_PER_DOC = 100, 100  # 10,000 chunks; project "small" holds 1% of them
WORDS = "battery supplier march budget remote button chime plastic launch risk price retail logo charger".split()


def unit_rows(n: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((n, DIM), dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def text_for(doc: int, i: int) -> str:
    rng = np.random.default_rng(doc * 1000 + i)
    return " ".join(rng.choice(WORDS, size=12)) + f" item{doc}x{i}"


@pytest.fixture(scope="module")
def corpus(database_url):
    conn = connect(database_url)
    conn.execute("TRUNCATE documents CASCADE; TRUNCATE keyword_stats")
    vectors = unit_rows(N_DOCS * CHUNKS_PER_DOC, seed=1)
    loads = []
    for d in range(N_DOCS):
        texts = [text_for(d, i) for i in range(CHUNKS_PER_DOC)]
        body = "\n".join(texts)
        chunks, offset = [], 0
        for i, text in enumerate(texts):
            chunks.append(Chunk(index=i, text=text, start_char=offset, end_char=offset + len(text), token_count=13))
            offset += len(text) + 1
        project = "small" if d == 0 else "big"
        source = repo.SourceObject("t1", project, "b", f"projects/{project}/doc{d}.txt", content_sha256=str(d))
        parsed = ParsedDocument(kind="document", format="text", text=body)
        loads.append(
            DocumentLoad(source, repo.DocumentFields(), parsed, chunks, vectors[d * CHUNKS_PER_DOC : (d + 1) * CHUNKS_PER_DOC])
        )
    bulk_load(conn, loads, MODEL, DIM)
    conn.execute("ANALYZE chunks; ANALYZE chunk_lexemes; ANALYZE documents")
    yield conn, vectors
    conn.execute("TRUNCATE documents CASCADE; TRUNCATE keyword_stats")
    conn.close()


def semantic(conn, scope, vector, k=10):
    return search_chunks(conn, scope, mode="semantic", query="", query_vector=vector, model_id=MODEL, dimension=DIM, top_k=k)


def plan(conn, scope, vector, mode="semantic", k=10, exact=False) -> str:
    statement, params = chunk_search_statement(
        scope, mode=mode, query="battery", query_vector=vector, model_id=MODEL, dimension=DIM, top_k=k, exact=exact
    )
    with conn.transaction():
        set_search_options(conn)
        return "\n".join(r[0] for r in conn.execute("EXPLAIN " + statement, params, prepare=False))


def test_a_filter_matching_one_percent_still_returns_top_k(corpus):
    conn, vectors = corpus
    query = unit_rows(1, seed=99)[0]
    hits = semantic(conn, SearchScope("t1", ("small",)), query, k=10)
    assert len(hits) == 10 and {h.project_id for h in hits} == {"small"}
    exact = np.argsort(-(vectors[:CHUNKS_PER_DOC] @ query))[:10]  # project "small" = the first document
    assert {h.content.rsplit(" ", 1)[1] for h in hits} == {f"item0x{i}" for i in exact}


def test_the_hnsw_index_serves_semantic_search(corpus):
    conn, _ = corpus
    query = unit_rows(1, seed=7)[0]
    assert "chunks_emb_test_synthetic_384_384" in plan(conn, SearchScope("t1", ("big",)), query)
    assert "chunks_emb_test_synthetic_384_384" in plan(conn, SearchScope("t1"), query)
    hits = semantic(conn, SearchScope("t1", ("big",)), query, k=50)
    assert len(hits) == 50


def test_a_semantic_search_returns_the_true_top_k_with_all_its_fields(corpus):
    """Semantic mode has a statement of its own (no fusion): same index choice, same fields as the hybrid one."""
    conn, vectors = corpus
    query = unit_rows(1, seed=5)[0]
    for exact in (False, True):
        explained = plan(conn, SearchScope("t1", ("big",)), query, exact=exact)
        assert ("chunks_emb_test_synthetic_384_384" in explained) is not exact and "semantic" not in explained

    scope = SearchScope("t1", ("big",), source_prefix="projects/big/doc7.")  # a documents filter, joined in the scan

    hits = search_chunks(conn, scope, mode="semantic", query="", query_vector=query, model_id=MODEL, dimension=DIM,
                         top_k=5, exact=True)  # fmt: skip

    doc_vectors = vectors[7 * CHUNKS_PER_DOC : 8 * CHUNKS_PER_DOC]  # doc7 is the only document under the prefix
    expected = np.argsort(-(doc_vectors @ query))[:5]
    assert [h.metadata["chunk_index"] for h in hits] == [int(i) for i in expected]
    assert [h.similarity for h in hits] == pytest.approx([float(doc_vectors[i] @ query) for i in expected], abs=1e-5)
    assert [h.score for h in hits] == [h.similarity for h in hits]
    assert [h.semantic_rank for h in hits] == [1, 2, 3, 4, 5]
    assert {(h.keyword_rank, h.keyword_score) for h in hits} == {(None, None)}
    first = hits[0]
    assert first.content == text_for(7, int(expected[0])) and first.source_uri.endswith("projects/big/doc7.txt")
    assert (first.project_id, first.speakers, first.metadata["meeting_date"]) == ("big", [], None)


def test_scope_size_counts_the_chunks_a_filter_can_reach(corpus):
    conn, _ = corpus
    small_doc = conn.execute("SELECT id::text FROM documents WHERE project_id = 'small'").fetchone()[0]
    total = N_DOCS * CHUNKS_PER_DOC
    assert scope_size(conn, SearchScope("t1", ("small",))) == ScopeSize(CHUNKS_PER_DOC, total)
    assert scope_size(conn, SearchScope("t1")) == ScopeSize(total, total)
    assert scope_size(conn, SearchScope("t1", document_ids=(small_doc,))) == ScopeSize(CHUNKS_PER_DOC, total)
    # Another tenant's chunks are not counted.
    assert scope_size(conn, SearchScope("t2", document_ids=(small_doc,))) == ScopeSize(0, 0)


def test_scope_size_reads_the_vector_index_rows_of_every_tenant_from_the_catalog(corpus):
    conn, _ = corpus
    index = embedding_index_name("chunks", MODEL, DIM)
    total = N_DOCS * CHUNKS_PER_DOC
    assert scope_size(conn, SearchScope("t1", ("small",)), index) == ScopeSize(CHUNKS_PER_DOC, total, total)
    # The graph is shared: another tenant (no chunks of its own) searches all of it.
    assert scope_size(conn, SearchScope("t2"), index) == ScopeSize(0, 0, total)
    assert scope_size(conn, SearchScope("t1"), "no_such_index").index_rows == 0


@pytest.mark.parametrize(
    ("index_rows", "tenant_rows", "ef_search"),
    [
        (50_000, 50_000, 100),  # small graphs keep the configured value
        (100_000, 2_000, 100),
        (400_000, 10_000, 200),  # other tenants' rows make the graph bigger: it grows all the same
        (0, 900_000, 300),  # index not analyzed yet: the tenant's rows stand in
        (1_000_000, 1_000_000, 316),
        (10_000_000, 10_000_000, 1000),
        (50_000_000, 50_000_000, 1000),  # pgvector's ceiling
    ],
)
def test_ef_search_grows_with_the_square_root_of_the_graph_beyond_the_base_rows(index_rows, tenant_rows, ef_search):
    assert ScopeSize(0, tenant_rows, index_rows).ef_search(base=100, base_rows=100_000, most=1000) == ef_search


@pytest.mark.parametrize(
    ("rows", "tenant_rows", "exact"),
    [
        (10_000, 1_000_000, True),  # 1% of a million
        (100_000, 1_000_000, False),  # too many rows to sort
        (10_000, 100_000, False),  # 10%: HNSW keeps most of what it visits
        (60, 2_000, True),  # one meeting
        (2_000, 2_000, False),  # a tenant's whole, small corpus
    ],
)
def test_exact_search_is_chosen_for_small_selective_scopes(rows, tenant_rows, exact):
    assert ScopeSize(rows, tenant_rows).exact_is_faster(max_rows=20_000, max_share=0.05) is exact


def test_an_exact_search_skips_the_index_and_returns_the_true_top_k(corpus):
    conn, vectors = corpus
    query = unit_rows(1, seed=99)[0]
    scope = SearchScope("t1", ("small",))
    explained = plan(conn, scope, query, exact=True)
    assert "chunks_emb_test_synthetic_384_384" not in explained and "Sort" in explained
    hits = search_chunks(conn, scope, mode="semantic", query="", query_vector=query, model_id=MODEL, dimension=DIM,
                         top_k=10, exact=True)  # fmt: skip
    expected = np.argsort(-(vectors[:CHUNKS_PER_DOC] @ query))[:10]
    assert [h.content.rsplit(" ", 1)[1] for h in hits] == [f"item0x{i}" for i in expected]  # in order, not only as a set


def test_indexes_serve_keyword_search(corpus):
    """BM25 reads the chunks' tsvectors: a large project's matches through their GIN index, a small one's rows by project."""
    conn, _ = corpus
    big = plan(conn, SearchScope("t1", ("big",)), None, mode="keyword")
    small = plan(conn, SearchScope("t1", ("small",)), None, mode="keyword")
    assert "chunks_search_tsv_idx" in big
    assert "chunks_tenant_project_idx" in small
    assert "Seq Scan on chunks" not in big + small


def bm25_reference(docs: dict[int, list[str]], query: list[str], k1=1.2, b=0.75) -> dict[int, float]:
    n = len(docs)
    avgdl = sum(len(t) for t in docs.values()) / n
    df = Counter(term for terms in docs.values() for term in set(terms))
    scores = {}
    for doc_id, terms in docs.items():
        tf = Counter(terms)
        score = sum(
            math.log(1 + (n - df[q] + 0.5) / (df[q] + 0.5)) * tf[q] * (k1 + 1) / (tf[q] + k1 * (1 - b + b * len(terms) / avgdl))
            for q in set(query)
            if q in tf
        )
        if score > 0:
            scores[doc_id] = score
    return scores


def test_keyword_scores_equal_a_reference_bm25(corpus):
    conn, _ = corpus
    rows = conn.execute(
        "SELECT c.id, array_agg(t.lexeme ORDER BY t.lexeme), array_agg(cardinality(t.positions) ORDER BY t.lexeme) "
        "FROM chunks c CROSS JOIN LATERAL unnest(c.search_tsv) t WHERE c.project_id = 'small' GROUP BY c.id"
    ).fetchall()
    docs = {cid: [lex for lex, n in zip(lexemes, counts) for _ in range(n)] for cid, lexemes, counts in rows}
    query_terms = conn.execute(
        "SELECT tsvector_to_array(to_tsvector('english', 'battery chimes and the retail price'))"
    ).fetchone()[0]
    reference = bm25_reference(docs, query_terms)
    expected = sorted(reference.items(), key=lambda kv: (-kv[1], kv[0]))[:20]

    hits = search_chunks(conn, SearchScope("t1", ("small",)), mode="keyword", query="battery chimes and the retail price",
                         query_vector=None, model_id=MODEL, dimension=DIM, top_k=20)  # fmt: skip

    assert [h.id for h in hits] == [cid for cid, _ in expected]
    assert [h.score for h in hits] == pytest.approx([score for _, score in expected], rel=1e-9)


def test_hybrid_finds_what_only_one_side_finds(corpus):
    conn, vectors = corpus
    rare_doc, rare_chunk = 37, 5
    rare_term = f"item{rare_doc}x{rare_chunk}"  # a unique token: only the keyword side can find it
    target = vectors[rare_doc * CHUNKS_PER_DOC + rare_chunk - 1]  # a different chunk: only the semantic side
    hits = search_chunks(conn, SearchScope("t1", ("big",)), mode="hybrid", query=rare_term, query_vector=target,
                         model_id=MODEL, dimension=DIM, top_k=5)  # fmt: skip
    tails = [h.content.rsplit(" ", 1)[1] for h in hits]
    assert rare_term in tails
    assert f"item{rare_doc}x{rare_chunk - 1}" in tails
    semantic_only = semantic(conn, SearchScope("t1", ("big",)), target, k=5)
    assert rare_term not in [h.content.rsplit(" ", 1)[1] for h in semantic_only]


def test_threshold_cuts_the_semantic_side(corpus):
    conn, vectors = corpus
    hits = search_chunks(conn, SearchScope("t1", ("big",)), mode="semantic", query="", query_vector=vectors[500],
                         model_id=MODEL, dimension=DIM, top_k=10, threshold=0.9)  # fmt: skip
    assert len(hits) == 1 and hits[0].similarity == pytest.approx(1.0, abs=1e-5)
    assert re.search(r"item5x0$", hits[0].content)


@pytest.mark.parametrize("share", [0.5, 0.7])
def test_convex_fusion_scores_equal_the_scaled_sides_recomputed(corpus, share):
    from rag.search.engine import FusionWeights

    conn, vectors = corpus
    scope, query, vector = SearchScope("t1", ("small",)), "battery chimes retail price", vectors[42]
    options = dict(query=query, query_vector=vector, model_id=MODEL, dimension=DIM, exact=True)
    semantic_side = search_chunks(conn, scope, mode="semantic", top_k=40, **options)
    keyword_side = search_chunks(conn, scope, mode="keyword", top_k=40, **options)

    def scaled(scores: dict[int, float]) -> dict[int, float]:
        low, high = min(scores.values()), max(scores.values())
        return {k: (v - low) / (high - low) for k, v in scores.items()}

    sem = scaled({h.id: h.similarity for h in semantic_side})
    kw = scaled({h.id: h.score for h in keyword_side})
    expected = {i: share * sem.get(i, 0.0) + (1 - share) * kw.get(i, 0.0) for i in sem.keys() | kw.keys()}
    best = sorted(expected.items(), key=lambda kv: (-kv[1], kv[0]))[:10]

    hits = search_chunks(conn, scope, mode="hybrid", top_k=10, fusion=FusionWeights(semantic_share=share), **options)

    assert [h.id for h in hits] == [i for i, _ in best]
    assert [h.score for h in hits] == pytest.approx([s for _, s in best], abs=1e-9)
    assert all(h.keyword_score == pytest.approx(next(k.score for k in keyword_side if k.id == h.id))
               for h in hits if h.keyword_rank is not None)  # fmt: skip


def test_scope_sizes_are_reused_for_their_ttl_then_counted_again(corpus):
    from rag.search.scope_size import ScopeSizeCache

    conn, _ = corpus

    class CountingConnection:
        def __init__(self):
            self.statements = 0

        def execute(self, *args, **kwargs):
            self.statements += 1
            return conn.execute(*args, **kwargs)

    counting = CountingConnection()
    small, big = SearchScope("t1", ("small",)), SearchScope("t1", ("big",))
    cache = ScopeSizeCache()

    sizes = [cache.size(counting, s, ttl_seconds=3600) for s in (small, small, big, small)]

    assert sizes == [scope_size(conn, small), scope_size(conn, small), scope_size(conn, big), scope_size(conn, small)]
    assert counting.statements == 2  # one per scope
    assert cache.size(counting, small, ttl_seconds=0) == scope_size(conn, small) and counting.statements == 3


class SyntheticEmbedder:
    """The corpus's synthetic model: every query maps to one fixed unit vector."""

    model_id, dimension, max_input_tokens = MODEL, DIM, 256

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed(self, texts):
        return [unit_rows(1, seed=5)[0].tolist() for _ in texts]


@pytest.mark.parametrize(("base_rows", "ef_search"), [(100_000, 40), (1_000, 126), (10, 1000)])
def test_run_search_widens_ef_search_with_the_size_of_the_vector_index(corpus, monkeypatch, base_rows, ef_search):
    from rag.config import Settings
    from rag.search import service

    conn, _ = corpus
    used = []

    def recording(*args, **kwargs):
        used.append(kwargs["ef_search"])
        return search_types(*args, **kwargs)

    monkeypatch.setattr(service, "search_types", recording)
    monkeypatch.setattr(service, "_scope_sizes", type(service._scope_sizes)())
    settings = Settings(hnsw_ef_search=40, hnsw_ef_search_rows=base_rows, hnsw_ef_search_max=1000, query_log_flush_seconds=0)
    query = service.SearchQuery("battery", SearchScope("t1"), mode="semantic", top_k=10)

    ranked, _ = service.run_search(conn, SyntheticEmbedder(), settings, query)

    assert used == [ef_search]  # 10,000 rows in the index: 40 x sqrt(10,000 / base_rows), within 40..1000
    assert len(ranked) == 10


def test_a_speaker_filter_is_folded_before_planning_and_served_by_its_index(corpus):
    """The filter's names are folded once, at planning (an immutable function of a parameter, sql/0011), so the
    speakers' GIN index finds their chunks: the plan compares the folded constant, and no chunks are scanned whole."""
    conn, _ = corpus
    query = unit_rows(1, seed=11)[0]
    sofia = ("SOFIA RUIZ (PM)",)
    for scope, mode in [
        (SearchScope("t1", ("big",), speakers=sofia), "semantic"),
        (SearchScope("t1", speakers=sofia), "keyword"),
    ]:
        explained = plan(conn, scope, query, mode=mode)
        assert "Bitmap Index Scan on chunks_speaker_keys_idx" in explained, mode
        assert """Index Cond: (speaker_keys && '{"sofia ruiz"}'::text[])""" in explained, mode
        assert "Seq Scan on chunks" not in explained, mode


def test_a_scopes_filters_are_every_field_but_the_tenant():
    from datetime import date

    scope = SearchScope("t1", ("apollo",), date_from=date(2026, 3, 1), speakers=("Dana",), source_prefix="notes/")

    assert scope.filters() == {
        "project_ids": ["apollo"], "document_ids": [], "date_from": "2026-03-01", "date_to": None,
        "speakers": ["Dana"], "source_prefix": "notes/",
    }  # fmt: skip
