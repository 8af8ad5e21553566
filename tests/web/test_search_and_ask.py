"""Search with the query's words highlighted, and a cited answer whose [n] opens the meeting at the cited turn."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

from tests.web.conftest import PROJECT, in_view, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def place(href: str) -> tuple[str, dict[str, int]]:
    """The document id and the turn/start/end of a meeting view link (#/doc/<id>?turn=&start=&end=)."""
    parts = urlsplit(href.lstrip("#"))
    document_id = unquote(parts.path.removeprefix("/doc/"))
    return document_id, {name: int(values[0]) for name, values in parse_qs(parts.query).items()}


def test_the_project_picker_opens_the_project_s_search(page, stack):
    page.wait_for_selector(".card")
    assert PROJECT in page.locator(".card .title").all_inner_texts()
    page.click(f".card a.title:text-is('{PROJECT}')")
    page.wait_for_selector("#q")
    assert page.url.endswith(f"#/p/{PROJECT}/search")
    assert page.inner_text("#tabs [aria-current=page]") == "Search"


def test_search_shows_the_results_with_the_query_s_words_highlighted(page, stack):
    page.goto(f"{stack.url}/#/p/{PROJECT}/search")
    page.fill("#q", "battery supplier")
    page.press("#q", "Enter")
    page.wait_for_selector(".result")

    expected = stack.api(
        "/v1/search",
        {
            "query": "battery supplier",
            "project_ids": [PROJECT],
            "types": ["chunk", "decision", "risk", "task"],
            "mode": "hybrid",
            "top_k": 20,
        },
    )["results"]
    shown = page.locator(".result")
    assert shown.count() == len(expected) > 0
    assert shown.locator(".content").all_text_contents() == [hit["content"] for hit in expected]
    marks = {text.lower() for text in page.locator(".result .content mark").all_inner_texts()}
    assert {"battery", "supplier"} <= marks and all(m.startswith(("batter", "suppli")) for m in marks)
    # Each result opens the meeting view at its turn and range.
    first = expected[0]
    assert place(shown.first.locator("a.source").get_attribute("href")) == (
        first["document_id"], {"turn": first["start_turn"], "start": first["start_char"], "end": first["end_char"]}
    )  # fmt: skip
    assert "q=battery+supplier" in page.url  # the search is in the address: reload, back and forward show it again
    screenshot(page, "search")


def test_the_mode_and_types_narrow_the_search(page, stack):
    page.goto(f"{stack.url}/#/p/{PROJECT}/search")
    page.fill("#q", "battery")
    page.select_option("#mode", "keyword")
    for box in page.locator("input[name=types]").all():
        box.set_checked(box.get_attribute("value") == "decision")
    page.click("#search-form button[type=submit]")
    page.wait_for_selector(".result")
    assert set(page.locator(".result .badge").all_text_contents()) == {"decision"}
    assert re.search(r"mode=keyword&types=decision$", page.url)
    page.reload()  # the address alone gives the same screen
    page.wait_for_selector(".result")
    assert page.input_value("#mode") == "keyword" and page.is_checked("#type-decision") and not page.is_checked("#type-chunk")


def test_a_cited_answer_s_n_opens_the_meeting_at_the_cited_turn_with_the_range_highlighted(page, stack):
    page.goto(f"{stack.url}/#/p/{PROJECT}/ask")
    page.fill("#question", "who will update the enclosure drawings, and by when?")
    page.press("#question", "Enter")  # Enter asks
    page.wait_for_selector(".answer-text a.cite")
    cites = page.locator(".answer-text a.cite")
    sources = page.locator(".citations li")
    assert sources.count() >= cites.count() > 0
    assert all(
        href.startswith("#/doc/") for href in sources.locator("a").evaluate_all("links => links.map(a => a.getAttribute('href'))")
    )
    screenshot(page, "ask")

    document_id, cited = place(cites.first.get_attribute("href"))
    cites.first.click()
    turn = page.locator(f"#turn-{cited['turn']}")
    turn.wait_for()
    assert "target" in turn.get_attribute("class")
    assert in_view(page, f"#turn-{cited['turn']}")
    content = stack.api(f"/v1/documents/{document_id}/content")
    spoken = content["turns"][cited["turn"]]
    assert spoken["start_char"] <= cited["start"] < cited["end"] <= spoken["end_char"]  # a citation inside one turn
    assert turn.locator("mark.cited").text_content() == content["text"][cited["start"] : cited["end"]]
    assert page.locator("mark.cited").count() == 1
    screenshot(page, "meeting")

    page.go_back()  # the answer again, without asking again
    page.wait_for_selector(".answer-text a.cite")
    assert page.input_value("#question") == "who will update the enclosure drawings, and by when?"
