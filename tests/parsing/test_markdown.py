"""Markdown: sections per ATX heading with heading paths; ``#`` in code is not a heading."""

from __future__ import annotations

import pytest

from rag.parsing import parse_document
from rag.parsing.markdown import headings


def test_handbook_sections_paths_and_offsets(parse_fixture, fixture_bytes):
    doc = parse_fixture("handbook.md")
    assert (doc.kind, doc.format, doc.title, doc.turns) == ("document", "markdown", "Team handbook", [])
    assert doc.text == fixture_bytes("handbook.md").decode()
    assert [(s.heading_path, s.start_char, s.end_char) for s in doc.sections] == [
        ((), 0, 32),
        (("Team handbook",), 32, 71),
        (("Team handbook", "Meetings"), 71, 108),  # "## Meetings ##": closing marks dropped
        (("Team handbook", "Meetings", "Notes"), 108, 212),
        (("Team handbook", "Meetings", "Notes", "Templates"), 212, 267),
        (("Team handbook", "Decisions"), 267, 317),
        (("Appendix",), 317, 343),
    ]
    assert doc.sections[-1].end_char == len(doc.text)
    # sections tile the document: each starts where the one before ends
    assert all(a.end_char == b.start_char for a, b in zip(doc.sections, doc.sections[1:]))


def test_sections_start_at_their_heading_and_keep_fenced_code(parse_fixture):
    doc = parse_fixture("handbook.md")
    body = [doc.text[s.start_char : s.end_char] for s in doc.sections]
    assert body[0] == "Intro text before any heading.\n\n"
    assert [b.split("\n", 1)[0] for b in body[1:]] == [
        "# Team handbook",
        "## Meetings ##",
        "### Notes",
        "#### Templates",
        "## Decisions",
        "# Appendix",
    ]
    assert "# this is a comment, not a heading" in body[3]
    assert "## not a heading either\n```\n~~~~" in body[4]  # a ``` line does not close a ~~~~ fence


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("# C#\n", [(0, 1, "C#")]),
        ("## Budget ##\n", [(0, 2, "Budget")]),
        ("   ### Indented up to three\n", [(0, 3, "Indented up to three")]),
        ("    # four spaces is code\n", []),
        ("#hashtag\n#\n####### seven\n", []),
        ("Intro\n````\n# code\n```\n# still code\n````\n# Real\n", [(40, 1, "Real")]),  # ``` is too short to close ````
        ("```\n# never closed\n", []),
        ("---\ntitle: Plan\n# a YAML comment\n---\n# Plan\n", [(37, 1, "Plan")]),
    ],
)
def test_heading_detection(text, found):
    assert headings(text) == found


def test_a_skipped_level_keeps_the_path_to_the_nearest_parent():
    doc = parse_document(b"# Guide\n\n### Deep\n\ntext\n\n## Mid\n\nmore\n", "guide.md")
    assert [s.heading_path for s in doc.sections] == [("Guide",), ("Guide", "Deep"), ("Guide", "Mid")]


def test_a_markdown_file_without_headings_is_one_untitled_section():
    doc = parse_document(b"Just a note.\n\nWith two paragraphs.\n", "note.md")
    assert (doc.format, doc.title) == ("markdown", None)
    assert [(s.heading_path, s.start_char, s.end_char) for s in doc.sections] == [((), 0, 35)]


def test_the_title_is_the_first_h1_not_the_first_heading():
    doc = parse_document(b"## Summary\n\nx\n\n# Launch plan\n\ny\n\n# Later\n", "plan.md")
    assert doc.title == "Launch plan"
    assert doc.sections[0].heading_path == ("Summary",)  # no text before it: no empty-path section
