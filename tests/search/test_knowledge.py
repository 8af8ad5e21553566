"""Segments, decisions, risks, opportunities and tasks as search types, with real vectors from the local model."""

from __future__ import annotations

import math
from collections import Counter
from datetime import date

import numpy as np
import pytest

from rag.search.engine import FusionWeights, SearchScope, search_type, search_types
from rag.search.fusion import merge_types
from rag.search.types import SEARCHABLE_TYPES
from rag.store.connection import connect
from tests.search.knowledge_rows import GLOBEX_ITEMS, REMOTE_ITEMS, TABLES, insert_document, insert_items

pytestmark = pytest.mark.slow

KNOWLEDGE = tuple(TABLES)
KEYS = {
    "review": "projects/remote/2026-11-02-battery-review.txt",
    "standup": "projects/remote/2026-11-09-launch-standup.vtt",
    "dock": "projects/other/2026-11-04-dock.txt",
    "secret": "projects/remote/globex-secret.txt",
}
ALL_ITEMS = REMOTE_ITEMS + GLOBEX_ITEMS


@pytest.fixture(scope="module")
def kb(database_url, local_embedder):
    """The knowledge base of knowledge_rows: document key -> (id, tenant, project), and the embedder."""
    conn = connect(database_url)
    conn.execute("TRUNCATE documents CASCADE")
    places = {"review": ("acme", "remote", date(2026, 11, 2)), "standup": ("acme", "remote", date(2026, 11, 9)),
              "dock": ("acme", "other", date(2026, 11, 4)), "secret": ("globex", "remote", date(2026, 11, 3))}  # fmt: skip
    documents = {
        key: (insert_document(conn, tenant, project, KEYS[key], meeting_date=day, title=key), tenant, project)
        for key, (tenant, project, day) in places.items()
    }
    insert_items(conn, local_embedder, documents, ALL_ITEMS)
    conn.execute("ANALYZE segments, decisions, risks, opportunities, tasks")
    yield conn, documents, local_embedder
    conn.execute("TRUNCATE documents CASCADE")
    conn.close()


def vector_of(embedder, text: str) -> np.ndarray:
    return np.asarray(embedder.embed([text])[0], dtype=np.float32)


def run(kb, type_name, query, *, mode="hybrid", scope=SearchScope("acme", ("remote",)), top_k=5, threshold=0.0):
    conn, _, embedder = kb
    return search_type(
        conn, SEARCHABLE_TYPES[type_name], scope, mode=mode, query=query,
        query_vector=None if mode == "keyword" else vector_of(embedder, query),
        model_id=embedder.model_id, dimension=embedder.dimension, top_k=top_k, threshold=threshold,
    )  # fmt: skip


def text_of(type_name: str, hit) -> str:
    """The item text a hit stands for (a segment shows its title and summary as content)."""
    return hit.metadata["summary"] if type_name == "segment" else hit.content


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
@pytest.mark.parametrize(
    ("type_name", "query", "expected", "fields"),
    [
        ("segment", "when does the product launch?", "The supplier confirmed delivery in the second week",
         {"title": "Launch schedule", "method": "texttiling"}),
        ("decision", "what did we decide about the battery?", "Switch the remote to a rechargeable",
         {"owner": "Maya", "status": "agreed", "rationale": "Users found replacing AAA cells the most annoying part",
          "impact": "two dollars forty more per unit", "method": "rules"}),
        ("risk", "could the cells arrive late?", "The cell supplier Voltacorp",
         {"category": "supply", "likelihood": "medium", "impact": "high", "mitigation": "Qualify a second cell supplier"}),
        ("opportunity", "how could we earn more per unit?", "Sell a premium backlit edition",
         {"type": "upsell", "owner": "Priya", "next_step": "Price the backlit model"}),
        ("task", "who asks the supplier when they deliver?", "Ask the supplier for a written delivery date",
         {"assignee": "Jonas", "due_date": "2026-11-06", "status": "open"}),
    ],
)  # fmt: skip
def test_each_type_finds_its_rows_with_their_fields(kb, type_name, query, expected, fields, mode):
    _, documents, _ = kb
    hits = run(kb, type_name, query, mode=mode)
    top = hits[0]
    item = next(i for i in REMOTE_ITEMS if i.type == type_name and i.text.startswith(expected))
    assert text_of(type_name, top) == item.text
    assert {k: top.metadata[k] for k in fields} == fields
    assert top.metadata["meeting_date"] == ("2026-11-02" if item.document == "review" else "2026-11-09")
    assert (top.document_id, top.project_id) == (documents[item.document][0], "remote")
    assert top.source_uri == f"s3://meetings/{KEYS[item.document]}" and top.title == item.document
    assert (top.start_turn, top.end_turn, top.speakers) == (item.start_turn, item.end_turn, list(item.speakers))
    assert 0 <= top.start_char < top.end_char
    assert 0.2 < top.similarity <= 1.0
    if type_name == "segment":
        assert top.content == f"{item.fields['title']}\n{item.text}"
    if mode == "semantic":
        assert [h.score for h in hits] == [h.similarity for h in hits]
    assert {h.project_id for h in hits} == {"remote"}
    assert {text_of(type_name, h) for h in hits} <= {i.text for i in REMOTE_ITEMS if i.document in ("review", "standup")}


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_keyword_finds_an_exact_rare_term(kb, mode):
    hits = run(kb, "risk", "Voltacorp", mode=mode, top_k=1)
    assert hits[0].content.startswith("The cell supplier Voltacorp")
    assert hits[0].keyword_rank == 1
    if mode == "keyword":
        assert hits[0].similarity is None and hits[0].score > 0
    assert run(kb, "risk", "Voltacorp", mode="keyword", scope=SearchScope("acme", ("other",))) == []


def test_a_query_without_any_word_finds_nothing_by_keyword(kb):
    assert run(kb, "decision", "the and of", mode="keyword") == []


def bm25_reference(docs: dict[int, list[str]], lengths: dict[int, int], query: list[str], k1=1.2, b=0.75) -> dict[int, float]:
    n, avgdl = len(docs), sum(lengths.values()) / len(lengths)
    df = Counter(term for terms in docs.values() for term in set(terms))
    scores = {}
    for doc_id, terms in docs.items():
        tf = Counter(terms)
        score = sum(
            math.log(1 + (n - df[q] + 0.5) / (df[q] + 0.5))
            * tf[q]
            * (k1 + 1)
            / (tf[q] + k1 * (1 - b + b * lengths[doc_id] / avgdl))
            for q in set(query)
            if q in tf
        )
        if score > 0:
            scores[doc_id] = score
    return scores


@pytest.mark.parametrize("type_name", KNOWLEDGE)
def test_knowledge_keyword_scores_equal_a_reference_bm25(kb, type_name):
    conn = kb[0]
    query = "the supplier and the battery: a drop test, charging port, budget, price or launch date of the dock"
    rows = conn.execute(
        f"SELECT c.id, array_agg(t.lexeme), array_agg(cardinality(t.positions)) FROM {TABLES[type_name]} c "
        "CROSS JOIN LATERAL unnest(c.search_tsv) t WHERE c.tenant_id = 'acme' GROUP BY c.id"
    ).fetchall()
    docs = {cid: [lex for lex, n in zip(lexemes, counts) for _ in range(n)] for cid, lexemes, counts in rows}
    lengths = {cid: len(lexemes) for cid, lexemes, _ in rows}  # BM25's length here: distinct lexemes
    terms = conn.execute("SELECT tsvector_to_array(to_tsvector('english', %s))", (query,)).fetchone()[0]
    expected = sorted(bm25_reference(docs, lengths, terms).items(), key=lambda kv: (-kv[1], kv[0]))

    hits = run(kb, type_name, query, mode="keyword", scope=SearchScope("acme"), top_k=20)

    assert expected and [h.id for h in hits] == [cid for cid, _ in expected]
    assert [h.score for h in hits] == pytest.approx([score for _, score in expected], rel=1e-9)


FILTERS = [
    (SearchScope("acme", ("other",)), lambda item: item.document == "dock"),
    (SearchScope("acme", date_from=date(2026, 11, 5)), lambda item: item.document == "standup"),
    (SearchScope("acme", date_to=date(2026, 11, 4)), lambda item: item.document in ("review", "dock")),
    (SearchScope("acme", speakers=("Ravi", "Lena")), lambda item: {"Ravi", "Lena"} & set(item.speakers)),
    (SearchScope("acme", source_prefix="projects/remote/2026-11-09"), lambda item: item.document == "standup"),
    (SearchScope("acme", document_ids=("review",)), lambda item: item.document == "review"),
    (SearchScope("globex"), lambda item: item.document == "secret"),
    (SearchScope("nobody"), lambda item: False),
]


@pytest.mark.parametrize("mode", ["semantic", "keyword"])
@pytest.mark.parametrize(("scope", "keep"), FILTERS)
def test_filters_and_tenant_select_exactly_their_rows(kb, scope, keep, mode):
    _, documents, _ = kb
    if scope.document_ids:
        scope = SearchScope(scope.tenant_id, document_ids=tuple(documents[key][0] for key in scope.document_ids))
    query = "battery supplier drop test launch budget plastic dock price specification delivery"
    for type_name in KNOWLEDGE:
        hits = run(kb, type_name, query, mode=mode, scope=scope, top_k=50, threshold=-1.0)
        expected = {i.text for i in ALL_ITEMS if i.type == type_name and keep(i)}
        found = {text_of(type_name, h) for h in hits}
        if mode == "semantic":
            assert found == expected, type_name  # every row with a vector is within reach
        else:
            assert found and found <= expected if expected else found == set(), type_name


def test_rows_of_another_model_are_never_compared(kb):
    conn, _, embedder = kb
    conn.execute("UPDATE risks SET embedding_model = 'other/model' WHERE description LIKE '%%drop test%%'")
    try:
        hits = run(kb, "risk", "could the enclosure fail the drop test?", mode="semantic", threshold=-1.0)
        assert [h.content for h in hits] == [i.text for i in REMOTE_ITEMS if i.type == "risk" and "Voltacorp" in i.text]
        hybrid = run(kb, "risk", "could the enclosure fail the drop test?", mode="hybrid")
        dropped = next(h for h in hybrid if "drop test" in h.content)  # the keyword side still finds it
        assert dropped.similarity is None and dropped.semantic_rank is None
    finally:
        conn.execute(f"UPDATE risks SET embedding_model = '{embedder.model_id}' WHERE description LIKE '%%drop test%%'")


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_all_types_make_one_ranking(kb, mode):
    conn, _, embedder = kb
    query = "is there a risk that the battery cells arrive late?"
    specs = [SEARCHABLE_TYPES[t] for t in KNOWLEDGE]
    by_type = search_types(conn, specs, SearchScope("acme"), mode=mode, query=query, query_vector=vector_of(embedder, query),
                           model_id=embedder.model_id, dimension=embedder.dimension, top_k=10)  # fmt: skip
    assert set(by_type) == set(KNOWLEDGE) and all(by_type.values())
    ranked = merge_types(by_type, mode=mode, top_k=10, fusion=FusionWeights())
    assert len(ranked) == 10 and len({t for t, _ in ranked}) >= 3
    assert ranked[0][0] == "risk" and "Voltacorp" in ranked[0][1].content
    scores = [hit.score for _, hit in ranked]
    assert scores == sorted(scores, reverse=True)
    if mode == "semantic":
        assert scores == [hit.similarity for _, hit in ranked]
