"""The meeting view (speakers, times, topics, items beside their turns) and the brief, every line one click from its turn."""

from __future__ import annotations

import pytest

from tests.web.conftest import PROJECT, in_view, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REVIEW = f"projects/{PROJECT}/2026-11-02-battery-review.txt"
STANDUP = f"projects/{PROJECT}/2026-11-09-launch-standup.vtt"
SPEC = f"projects/{PROJECT}/remote-control-spec.md"


def test_the_meeting_view_shows_speakers_topics_and_the_items_beside_their_turns(page, stack):
    document_id = stack.document_id(REVIEW)
    content = stack.api(f"/v1/documents/{document_id}/content")
    assert len(content["segments"]) >= 2 and content["items"]  # what the view is checked on

    page.goto(f"{stack.url}/#/doc/{document_id}")
    page.wait_for_selector(".turn")
    assert page.inner_text("h1") == content["title"]
    assert page.locator(".turn .who strong").all_inner_texts() == [turn["speaker"] for turn in content["turns"]]
    assert page.locator(".toc a").all_inner_texts() == [segment["title"] for segment in content["segments"]]
    for item in content["items"]:
        beside = page.locator(f"#turn-{item['start_turn']} .items").text_content()
        assert item["description"] in beside, item

    last = content["segments"][-1]
    page.locator(".toc a").last.click()  # the table of contents jumps to the topic's first turn
    page.wait_for_selector(f"#turn-{last['start_turn']}.target")
    assert in_view(page, f"#turn-{last['start_turn']}")


def test_the_meeting_view_shows_each_turn_s_time(page, stack):
    document_id = stack.document_id(STANDUP)
    content = stack.api(f"/v1/documents/{document_id}/content")
    page.goto(f"{stack.url}/#/doc/{document_id}?turn=3")
    page.wait_for_selector("#turn-3.target")
    times = page.locator(".turn time").all_inner_texts()
    assert times[:3] == ["0:00", "0:06", "0:15"] and len(times) == len(content["turns"])
    assert in_view(page, "#turn-3")


def test_a_document_shows_as_text_with_headings_and_the_cited_range_highlighted(page, stack):
    document_id = stack.document_id(SPEC)
    content = stack.api(f"/v1/documents/{document_id}/content")
    start = content["text"].index("A rechargeable lithium pack")
    end = start + len("A rechargeable lithium pack")
    page.goto(f"{stack.url}/#/doc/{document_id}?start={start}&end={end}")
    page.wait_for_selector("mark.cited")
    assert page.locator("mark.cited").text_content() == "A rechargeable lithium pack"
    assert in_view(page, "mark.cited")
    assert "Power" in page.locator(".document h2, .document h3, .document h4").all_inner_texts()


def test_an_unknown_document_says_so(page, stack):
    unknown = "00000000-0000-4000-8000-000000000000"
    page.goto(f"{stack.url}/#/doc/{unknown}")
    alert = page.wait_for_selector("#main [role=alert]")
    assert unknown in alert.inner_text()


def test_the_brief_shows_decisions_risks_and_tasks_by_owner_each_linked_to_its_turn(page, stack):
    brief = stack.api(f"/v1/projects/{PROJECT}/brief")
    page.goto(f"{stack.url}/#/p/{PROJECT}/brief")
    page.wait_for_selector(".summary")
    sections = {
        section.locator("h2").first.inner_text(): section.locator("> ul.lines > li > a").all_inner_texts()
        for section in page.locator("main section").all()
    }
    assert sections["Current decisions"] == [item["description"] for item in brief["decisions"]]
    assert sections["Open risks"] == [item["description"] for item in brief["risks"]]
    owners = page.locator(".owner h3").all_inner_texts()
    assert owners == [group["owner"] or "Nobody named" for group in brief["tasks_by_owner"]]
    assert page.locator(".owner li.overdue").count() == brief["overdue_tasks"]
    links = page.locator("main .lines a").evaluate_all("links => links.map(a => a.getAttribute('href'))")
    assert links and all(href.startswith("#/doc/") for href in links)
    screenshot(page, "brief", full_page=True)

    decision = brief["decisions"][0]
    page.locator("main .lines a").first.click()  # the first current decision
    page.wait_for_selector(f"#turn-{decision['start_turn']}.target")
    assert in_view(page, f"#turn-{decision['start_turn']}")
