"""rag.llm's prompt helpers."""

from __future__ import annotations

from rag.llm import numbered_units


def test_each_number_is_one_line_whatever_the_sentence_holds():
    lines = ["Greg checked them. Done.\n- Linda sent the pay codes on 5 February.", "Short.", "x" * 2000]
    numbered = numbered_units(lines, 7, max_chars=100).split("\n")
    assert numbered[:2] == ["[7] Greg checked them. Done. - Linda sent the pay codes on 5 February.", "[8] Short."]
    assert numbered[2] == "[9] " + "x" * 100 and len(numbered) == 3
