"""A speaker filter names a person however the label writes them: case and role qualifiers do not matter."""

from __future__ import annotations

import numpy as np
import pytest

from rag.knowledge import BY_NAME
from rag.parsing.model import Chunk, ParsedDocument, Turn
from rag.search.engine import SearchScope, search_chunks, search_types
from rag.store import documents as repo

MODEL, DIM = "test/synthetic-384", 384
LINES = [
    (("Sofia Ruiz (PM)",), "the battery supplier confirmed the March launch"),
    (("Dana Kim",), "the battery charger failed the drop test"),
    (("Dana Kim", "Sofia Ruiz (PM)"), "the battery budget stays at two dollars"),
    (("Sofia Ruiz",), "the battery logo goes on the lid"),
]


@pytest.fixture
def meeting(db):
    body, chunks, offset = "", [], 0
    for i, (speakers, text) in enumerate(LINES):
        chunks.append(Chunk(i, text, offset, offset + len(text), 8, start_turn=i, end_turn=i, speakers=speakers))
        body += text + "\n"
        offset += len(text) + 1
    vectors = np.random.default_rng(4).standard_normal((len(LINES), DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    source = repo.SourceObject("t", "p", "b", "projects/p/2026-11-02-sync.txt", content_sha256="s")
    parsed = ParsedDocument(kind="transcript", format="text", text=body)
    document_id = repo.replace_document(db, source, repo.DocumentFields(), parsed, chunks, list(vectors), MODEL)
    return db, vectors, document_id


@pytest.mark.parametrize("mode", ["semantic", "keyword", "hybrid"])
@pytest.mark.parametrize("name", ["sofia ruiz", "SOFIA RUIZ", "Sofia Ruiz", "Sofia Ruiz (PM)", " sofia  ruiz [Acme]"])
def test_a_speaker_filter_finds_every_label_of_the_person_and_shows_the_labels_as_written(meeting, mode, name):
    conn, vectors, _ = meeting
    hits = search_chunks(
        conn, SearchScope("t", ("p",), speakers=(name,)), mode=mode, query="battery", query_vector=vectors[0],
        model_id=MODEL, dimension=DIM, top_k=10, threshold=-1.0,  # random vectors: keep every similarity
    )  # fmt: skip
    assert sorted((h.start_turn, tuple(h.speakers)) for h in hits) == [
        (0, ("Sofia Ruiz (PM)",)),
        (2, ("Dana Kim", "Sofia Ruiz (PM)")),
        (3, ("Sofia Ruiz",)),
    ]


def test_a_speaker_filter_keeps_other_people_out(meeting):
    conn, vectors, _ = meeting
    scope = SearchScope("t", ("p",), speakers=("dana kim (firmware)",))
    hits = search_chunks(conn, scope, mode="keyword", query="battery", query_vector=None, model_id=MODEL, dimension=DIM, top_k=10)
    assert sorted(h.start_turn for h in hits) == [1, 2]
    nobody = SearchScope("t", ("p",), speakers=("sofia lee",))
    assert search_chunks(conn, nobody, mode="keyword", query="battery", query_vector=None, model_id=MODEL, dimension=DIM) == []


def test_extracted_items_are_filtered_by_the_same_keys(meeting):
    conn, _, document_id = meeting
    for speakers, text in [(["Sofia Ruiz (PM)"], "order the battery samples"), (["Dana Kim"], "retest the battery charger")]:
        conn.execute(
            "INSERT INTO tasks (document_id, tenant_id, project_id, start_char, end_char, speakers, description,"
            " evidence, method) VALUES (%s, 't', 'p', 0, 10, %s, %s, %s, 'rules')",
            (document_id, speakers, text, text),
        )
    scope = SearchScope("t", ("p",), speakers=("SOFIA RUIZ",))
    hits = search_types(conn, [BY_NAME["task"]], scope, mode="keyword", query="battery", query_vector=None,
                        model_id=MODEL, dimension=DIM, top_k=10)["task"]  # fmt: skip
    assert [(h.content, h.speakers) for h in hits] == [("order the battery samples", ["Sofia Ruiz (PM)"])]


def meeting_of(conn, project: str, key: str, lines: list[tuple[str, str]], participants: tuple[str, ...] = ()) -> None:
    """A transcript of ``lines`` (speaker, words), one chunk per turn."""
    body, turns, chunks = "", [], []
    for i, (speaker, words) in enumerate(lines):
        start = len(body)
        body += f"{speaker}: {words}\n"
        turns.append(Turn(i, speaker, words, start, len(body) - 1))
        chunks.append(Chunk(i, body[start:-1], start, len(body) - 1, 8, start_turn=i, end_turn=i, speakers=(speaker,)))
    vectors = np.random.default_rng(len(body)).standard_normal((len(lines), DIM)).astype(np.float32)
    source = repo.SourceObject("t", project, "b", f"projects/{project}/{key}.txt", content_sha256=key)
    parsed = ParsedDocument(kind="transcript", format="text", text=body, turns=turns)
    fields = repo.DocumentFields(participants=list(participants))
    repo.replace_document(conn, source, fields, parsed, chunks, list(vectors), MODEL)


@pytest.fixture
def people(db):
    meeting_of(db, "p", "2026-11-02", [("Dana", "the battery ships in March"), ("Sofia Ruiz (PM)", "the battery budget holds")])
    meeting_of(db, "p", "2026-11-09", [("Dana Kim (Firmware)", "the battery charger passed"), ("Priya", "the battery logo")])
    # Project q has two Danas: a bare "Dana" there names neither.
    meeting_of(db, "q", "2026-11-03", [("Dana Kim", "the battery price"), ("Dana Lee", "the battery supplier")])
    meeting_of(db, "q", "2026-11-10", [("Dana", "the battery lid")])
    # Project r names its Dana in full only among the participants.
    meeting_of(db, "r", "2026-11-04", [("Dana", "the battery test")], participants=("Dana Kim",))
    return db


def speakers_found(conn, projects: tuple[str, ...], name: str) -> list[str]:
    scope = SearchScope("t", projects, speakers=(name,))
    hits = search_chunks(conn, scope, mode="keyword", query="battery", query_vector=None, model_id=MODEL, dimension=DIM, top_k=50)
    return sorted(label for h in hits for label in h.speakers)


@pytest.mark.parametrize("name", ["Dana", "dana kim", "DANA KIM (Firmware)", "Kim"])
def test_a_partial_name_is_the_projects_one_person_of_that_name(people, name):
    assert speakers_found(people, ("p",), name) == ["Dana", "Dana Kim (Firmware)"]


def test_a_partial_name_shared_by_two_people_stays_itself(people):
    assert speakers_found(people, ("q",), "dana") == ["Dana"]
    assert speakers_found(people, ("q",), "Dana Kim") == ["Dana Kim"]
    assert speakers_found(people, ("q",), "dana lee") == ["Dana Lee"]


def test_participants_name_the_speakers_of_their_meeting(people):
    assert speakers_found(people, ("r",), "Dana Kim") == ["Dana"]


def test_other_peoples_names_are_not_joined(people):
    assert speakers_found(people, ("p",), "sofia") == ["Sofia Ruiz (PM)"]  # the project's one Sofia
    assert speakers_found(people, ("p",), "priya kim") == []
    assert speakers_found(people, ("p",), "ruiz dana") == []
