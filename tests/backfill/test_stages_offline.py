"""The offline stages on the example transcripts and document: segments, vectors, items, idempotence."""

from __future__ import annotations

from datetime import date

import pytest

from rag.backfill.stages import run_named_stage
from tests.backfill.conftest import BUDGET_REVIEW, RELEASE_PROCESS, SCANNER_SYNC, ingest_file

pytestmark = pytest.mark.slow


def run_all(db, settings, embedder, batch_size=10):
    return {
        stage: run_named_stage(db, settings, stage, batch_size, embedder=embedder) for stage in ("segment", "embed", "extract")
    }


def segments_of(db, document_id):
    return db.execute(
        """SELECT segment_index, start_turn, end_turn, start_char, end_char, title, summary, speakers, heading_path, method
           FROM segments WHERE document_id = %s ORDER BY segment_index""",
        (document_id,),
    ).fetchall()


def items_of(db, table, document_id, *columns):
    extra = "".join(f", {c}" for c in columns)
    return db.execute(
        f"SELECT description, start_turn, end_turn, start_char, end_char, speakers, evidence{extra} FROM {table}"
        " WHERE document_id = %s ORDER BY start_char",
        (document_id,),
    ).fetchall()


def test_transcripts_split_at_the_topic_shift_with_extractive_titles_and_summaries(db, local_embedder, settings):
    scanner = ingest_file(db, SCANNER_SYNC, local_embedder)
    budget = ingest_file(db, BUDGET_REVIEW, local_embedder)
    body = db.execute("SELECT body FROM documents WHERE id = %s", (scanner,)).fetchone()[0]

    result = run_named_stage(db, settings, "segment", 10, embedder=local_embedder)

    assert (result.processed, result.failed, result.remaining) == (2, 0, 0)
    segments = segments_of(db, scanner)
    # Turn 12 opens the trade-show topic ("Next topic, the trade show in Rotterdam ...").
    assert [(s[1], s[2]) for s in segments] == [(0, 11), (12, 23)]
    assert all(s[9] == "texttiling" for s in segments)
    first, second = segments
    assert "firmware" in first[5].lower() or "scanner" in first[5].lower()
    assert "booth" in second[5].lower() or "artwork" in second[5].lower()
    assert body[first[3] : first[4]].startswith("Priya: Morning everyone.")
    assert body[second[3] : second[4]].startswith("Priya: Next topic") and body[second[3] : second[4]].endswith("from my side.")
    assert set(first[7]) == {"Priya", "Tom", "Aisha"} and "Marco" in second[7]
    # The summary is made of the segment's own turns ("Speaker: words").
    for sentence in first[6].split(" Priya: ") + second[6].split(" Marco: "):
        assert sentence.split(": ", 1)[-1].rstrip("…")[:40] in body
    budget_starts = [s[1] for s in segments_of(db, budget)]
    assert 12 in budget_starts and len(budget_starts) <= 3  # hiring starts at turn 12


def test_documents_get_one_segment_per_heading_section(db, local_embedder, settings):
    doc = ingest_file(db, RELEASE_PROCESS, local_embedder, meeting_date=None)
    body = db.execute("SELECT body FROM documents WHERE id = %s", (doc,)).fetchone()[0]

    run_named_stage(db, settings, "segment", 10, embedder=local_embedder)

    segments = segments_of(db, doc)
    assert [s[5] for s in segments] == ["Release process", "Branching", "Testing", "Store submission"]
    assert [tuple(s[8]) for s in segments] == [
        ("Release process",), ("Release process", "Branching"), ("Release process", "Testing"),
        ("Release process", "Store submission"),
    ]  # fmt: skip
    assert all(s[9] == "headings" and s[1] is None for s in segments)
    assert body[segments[2][3] : segments[2][4]].startswith("## Testing")
    assert segments[2][6].startswith("The QA team runs the regression suite")


def test_embed_fills_segment_vectors_from_their_own_text_and_keeps_ingest_chunk_vectors(db, local_embedder, settings):
    doc = ingest_file(db, SCANNER_SYNC, local_embedder)
    chunk_vectors = dict(db.execute("SELECT id, embedding FROM chunks WHERE document_id = %s", (doc,)).fetchall())
    run_named_stage(db, settings, "segment", 10, embedder=local_embedder)

    result = run_named_stage(db, settings, "embed", 10, embedder=local_embedder)

    assert (result.processed, result.remaining) == (1, 0)
    rows = db.execute(
        """SELECT s.embedding, s.embedding_model, substr(d.body, s.start_char + 1, s.end_char - s.start_char)
           FROM segments s JOIN documents d ON d.id = s.document_id WHERE s.document_id = %s ORDER BY s.segment_index""",
        (doc,),
    ).fetchall()
    own_text = local_embedder.embed([text for _, _, text in rows])
    for (vector, model, _), own in zip(rows, own_text):
        assert model == local_embedder.model_id
        assert sum(a * b for a, b in zip(vector.to_list(), own)) > 0.9  # the segment's words (more in test_segment_search)
    after = dict(db.execute("SELECT id, embedding FROM chunks WHERE document_id = %s", (doc,)).fetchall())
    assert {k: v.to_list() for k, v in after.items()} == {k: v.to_list() for k, v in chunk_vectors.items()}
    assert db.execute("SELECT status FROM documents WHERE id = %s", (doc,)).fetchone()[0] == "embedded"


def test_rules_extract_the_decisions_risks_opportunities_and_tasks_of_the_meeting(db, local_embedder, settings):
    doc = ingest_file(db, SCANNER_SYNC, local_embedder)  # meeting on Tuesday 2026-11-10
    body = db.execute("SELECT body FROM documents WHERE id = %s", (doc,)).fetchone()[0]

    run_all(db, settings, local_embedder)

    decisions = items_of(db, "decisions", doc, "status")
    assert [(d[0], d[1]) for d in decisions] == [
        ("We decided in the pilot review to flash version two point three on every scanner before it goes on the floor.", 7),
        ("We'll go with that.", 8),
        # "Agreed, I'll book the main aisle booth ..." in the next turn says it again: one decision over both turns
        ("Let's take the main aisle booth, the leads from last year paid for it twice over.", 18),
    ]
    assert decisions[-1][2] == 19
    assert {d[-1] for d in decisions} == {"current"}  # one meeting, no change stated: each stands
    risks = items_of(db, "risks", doc, "category")
    assert [(r[1], r[-1]) for r in risks] == [(4, "technical"), (5, "technical"), (17, "supplier"), (21, "schedule")]
    assert (
        risks[1][0] == "There is a risk that the firmware upgrade bricks some units, we saw that with two devices in the pilot."
    )
    opportunities = items_of(db, "opportunities", doc, "type")
    assert [(o[1], o[-1]) for o in opportunities] == [(15, "partnership"), (16, "sales")]
    tasks = items_of(db, "tasks", doc, "assignee", "due_date", "status")
    assert [(t[1], t[-3], t[-2]) for t in tasks] == [
        (9, "Tom", date(2026, 11, 13)),  # "by Friday"
        (10, "Tom", date(2026, 11, 10)),  # "Can you also add ...?" taken on by Tom: "Sure, I'll ... today"
        (19, "Marco", date(2026, 11, 10)),  # "this afternoon"
        (20, "Aisha", date(2026, 11, 20)),  # "by the twentieth"
        (21, None, date(2026, 11, 20)),  # "please keep the twentieth"
        (22, "Marco", None),  # "Marco, please prepare the demo script" "Will do."
    ]
    assert {t[-1] for t in tasks} == {"open"}
    taken_on = [t for t in tasks if t[1] != t[2]]
    assert [(t[1], t[2], t[5]) for t in taken_on] == [(10, 11, ["Aisha", "Tom"]), (22, 23, ["Priya", "Marco"])]
    for _, start_turn, end_turn, start_char, end_char, speakers, evidence, *_ in decisions + risks + tasks:
        if start_turn == end_turn:
            assert body[start_char:end_char] == evidence  # exact source position of the words
            assert len(speakers) == 1
        else:  # a request and the answer that took it on: the sentences of both, in order
            assert evidence.startswith(body[start_char : start_char + 30]) and evidence.endswith(body[end_char - 8 : end_char])
    vectors = db.execute(
        "SELECT count(*) FROM tasks WHERE document_id = %s AND embedding_model = %s", (doc, local_embedder.model_id)
    ).fetchone()
    assert vectors[0] == len(tasks)
    segment_ids = {row[0] for row in db.execute("SELECT segment_id FROM tasks WHERE document_id = %s", (doc,))}
    assert len(segment_ids) == 2  # items point at the segment they came from


def test_rules_on_a_document_without_turns(db, local_embedder, settings):
    doc = ingest_file(db, RELEASE_PROCESS, local_embedder, meeting_date=None)
    run_all(db, settings, local_embedder)
    decisions = items_of(db, "decisions", doc)
    risks = items_of(db, "risks", doc)
    tasks = items_of(db, "tasks", doc, "assignee")
    assert [d[0] for d in decisions] == ["We decided to require two QA sign-offs before a build goes to the app stores."]
    assert [r[0] for r in risks] == [
        "The risk is that the regression suite takes longer than two days when the device farm is busy."
    ]
    assert [(t[0], t[-1]) for t in tasks] == [
        ("The release manager will post the submission status in the release channel.", "release manager")
    ]
    assert decisions[0][1] is None and decisions[0][5] == []


def test_rerunning_every_stage_writes_nothing_twice(db, local_embedder, settings):
    docs = [ingest_file(db, path, local_embedder) for path in (SCANNER_SYNC, BUDGET_REVIEW)]
    tables = ("segments", "decisions", "risks", "opportunities", "tasks")

    def snapshot():
        return {
            table: sorted(db.execute(f"SELECT document_id::text, start_char, end_char, method FROM {table}").fetchall())
            for table in tables
        }

    run_all(db, settings, local_embedder)
    first = snapshot()
    assert all(first[table] for table in tables)
    assert all(result.processed == 0 for result in run_all(db, settings, local_embedder).values())  # nothing pending
    # The same documents go through every stage again (as after re-ingesting identical content).
    db.execute("UPDATE documents SET status = 'raw_ingested' WHERE id = ANY(%s)", (docs,))
    results = run_all(db, settings, local_embedder)
    assert all(result.processed == 2 for result in results.values())
    assert snapshot() == first


def test_a_new_embedding_model_sends_documents_back_to_embed_and_never_mixes_models(db, local_embedder, settings, monkeypatch):
    from rag.config import Settings
    from rag.embedding.openai import OpenAIEmbedder
    from tests.embedding.fake_openai import FakeOpenAI

    docs = [ingest_file(db, path, local_embedder) for path in (SCANNER_SYNC, BUDGET_REVIEW)]
    run_all(db, settings, local_embedder)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    tables = ("chunks", "segments", "decisions", "risks", "opportunities", "tasks")

    def models_per_document():
        found: dict = {}
        for table in tables:
            for document_id, model in db.execute(f"SELECT DISTINCT document_id, embedding_model FROM {table}"):
                found.setdefault(document_id, set()).add(model)
        return found

    with FakeOpenAI(dimension=256) as fake:
        switched = Settings(embedding_provider="openai", embedding_dimension=256, openai_base_url=fake.base_url)
        openai_embedder = OpenAIEmbedder(switched)
        one = run_named_stage(db, switched, "embed", 1, embedder=openai_embedder)
        assert (one.processed, one.remaining) == (1, 1)
        # Mid-switch: the moved document is wholly new-model except its items (re-extracted next);
        # its chunks and segments never sit half in one model, half in the other.
        for table in ("chunks", "segments"):
            per_doc = db.execute(f"SELECT document_id, count(DISTINCT embedding_model) FROM {table} GROUP BY 1").fetchall()
            assert {count for _, count in per_doc} == {1}
        run_named_stage(db, switched, "embed", 10, embedder=openai_embedder)
        extracted = run_named_stage(db, switched, "extract", 10, embedder=openai_embedder)
    assert extracted.processed == 2
    assert models_per_document() == {doc: {"openai/text-embedding-3-small@256"} for doc in docs}  # shortened: its own space
    dims = db.execute("SELECT DISTINCT vector_dims(embedding) FROM segments").fetchall()
    assert dims == [(256,)]
    assert {row[0] for row in db.execute("SELECT status FROM documents")} == {"extracted"}
    assert fake.requests and {r["body"]["dimensions"] for r in fake.requests} == {256}
