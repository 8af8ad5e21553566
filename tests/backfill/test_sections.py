"""Items stated by the structure of meeting notes: the lines under Decisions / Risks / Action items labels."""

from __future__ import annotations

from datetime import date

import pytest

from rag.backfill.notes_layout import item_sections, title_kinds
from rag.backfill.sections import StatedItems, section_items, task_owner
from rag.backfill.units import Unit
from rag.parsing import parse_document
from tests.backfill import test_llm_paths
from tests.backfill.conftest import FIXTURES

DOCUMENTS = FIXTURES / "documents"
# Fixtures of the LLM paths: the fake OpenAI server and settings pointing at it.
fake = test_llm_paths.fake
llm_settings = test_llm_paths.llm_settings
MONDAY = date(2026, 3, 9)


def items_of(body: str, meeting_date: date | None = MONDAY):
    items, _covered = section_items(body, item_sections(body), 7, meeting_date)
    return items


def rows(items):
    """(kind, description, the kind's main fields) per item."""
    summary = []
    for item in items:
        f = item.fields
        if item.kind == "task":
            summary.append(("task", item.description, f["assignee"], f["due_date"], f["status"]))
        elif item.kind == "decision":
            summary.append(("decision", item.description, f["owner"], f["status"]))
        elif item.kind == "risk":
            summary.append(("risk", item.description, f["likelihood"], f["mitigation"]))
        else:
            summary.append((item.kind, item.description, f["owner"]))
    return summary


@pytest.mark.parametrize(
    ("title", "kinds"),
    [
        ("Decisions", ("decision",)),
        ("Decisions made", ("decision",)),
        ("Key decisions", ("decision",)),
        ("Agreed today", ("decision",)),  # the qualifier is the kind's own word
        ("What we agreed", ("decision",)),
        ("Outcomes", ("decision",)),
        ("Agreed actions", ("task",)),
        ("DECISION LOG", ("decision",)),
        ("3. Agreements", ("decision",)),
        ("Risks", ("risk",)),
        ("Risks and issues", ("risk",)),
        ("Risks & mitigations", ("risk",)),
        ("Blockers", ("risk",)),
        ("Action items", ("task",)),
        ("Action Items (owner, due date)", ("task",)),
        ("Actions", ("task",)),
        ("AIs", ("task",)),
        ("Next steps", ("task",)),
        ("Tasks", ("task",)),
        ("To do", ("task",)),
        ("To-dos", ("task",)),
        ("Follow-ups", ("task",)),
        ("Agreed actions", ("task",)),
        ("✅ Action points", ("task",)),
        ("Opportunities", ("opportunity",)),
        ("Actions / owners / due dates", ("task",)),
        ("Decisions & action items", ("decision", "task")),
        ("Decisions and next steps", ("decision", "task")),
        # not item sections: their lines keep the sentence rules
        ("Open questions", ()),
        ("Parking lot", ()),
        ("Discussion", ()),
        ("Budget and risks", ()),
        ("Mitigations", ()),
        ("Risk assessment of the vendor", ()),
    ],
)
def test_section_titles_name_their_kind(title, kinds):
    assert title_kinds(title) == kinds


@pytest.mark.parametrize(
    ("line", "owner"),
    [
        ("Dana: send the BOM, due March 16", "Dana"),
        ("Dana Kim: send the BOM", "Dana Kim"),
        ("Dana to send the BOM by Friday", "Dana"),
        ("Dana will send the BOM", "Dana"),
        ("Dana — send the BOM", "Dana"),
        ("@dana: send the BOM", "dana"),
        ("Send the BOM @dana", "dana"),
        ("Send the BOM (owner: Dana Kim)", "Dana Kim"),
        ("Send the BOM (Dana, Friday)", "Dana"),
        ("Send the BOM — Dana — 2026-03-16", "Dana"),
        ("Finalize BOM - Raj - Friday", "Raj"),
        # no one named
        ("Send the BOM by Friday", None),
        ("Talk to legal about the warranty", None),
        ("Remember to renew the domain", None),
        ("Everyone: read the proposal", None),
        ("Friday: demo to the customer", None),
    ],
)
def test_task_owner_as_written(line, owner):
    assert task_owner(line) == owner


def test_markdown_sections_become_items_of_their_kind_with_owner_due_date_and_status():
    body = """# Weekly sync

## Decisions
- We move the launch to May 19.
- Snowflake, not BigQuery, because egress is cheaper.

## Risks and issues
1. The supplier may slip the PCB order (likelihood: high).
   Mitigation: second source in Penang.
2. No budget for a second certification round.

## Action Items
- [ ] Dana to send the BOM by Friday
- [x] @raj: book the venue
- [X] Priya Shah: draft the release notes, due 2026-03-16
- Fix the login bug — Omar — tomorrow
- Update the roadmap (blocked on legal)
- Make sure the samples are delivered before the audit
- Order the enclosure samples (done)

## Open questions
- Should we go with Snowflake?
"""
    assert rows(items_of(body)) == [
        ("decision", "We move the launch to May 19.", None, "agreed"),
        ("decision", "Snowflake, not BigQuery, because egress is cheaper.", None, "agreed"),
        (
            "risk",
            "The supplier may slip the PCB order (likelihood: high). Mitigation: second source in Penang.",
            "high",
            "second source in Penang.",
        ),
        ("risk", "No budget for a second certification round.", None, None),
        ("task", "Dana to send the BOM by Friday", "Dana", date(2026, 3, 13), "open"),
        ("task", "@raj: book the venue", "raj", None, "done"),
        ("task", "Priya Shah: draft the release notes, due 2026-03-16", "Priya Shah", date(2026, 3, 16), "done"),
        ("task", "Fix the login bug — Omar — tomorrow", "Omar", date(2026, 3, 10), "open"),
        ("task", "Update the roadmap (blocked on legal)", None, None, "blocked"),
        ("task", "Make sure the samples are delivered before the audit", None, None, "open"),
        ("task", "Order the enclosure samples (done)", None, None, "done"),
    ]
    decision = items_of(body)[1]
    assert decision.fields["rationale"] == "egress is cheaper"


def test_items_keep_the_range_of_their_lines():
    body = "## Action items\n\n- Dana: send the BOM\n  with the new connector list\n  - ask Raj for the drawings\n- Omar to book the lab\n"
    first, second = items_of(body)
    assert body[first.start_char : first.end_char] == (
        "- Dana: send the BOM\n  with the new connector list\n  - ask Raj for the drawings"
    )
    assert first.description == "Dana: send the BOM with the new connector list"  # sub-items are evidence only
    assert first.evidence.endswith("ask Raj for the drawings")
    assert body[second.start_char : second.end_char] == "- Omar to book the lab"
    assert (first.method, first.segment_id, first.start_turn) == ("sections", 7, None)


def test_bold_labels_tables_and_mixed_sections():
    text = (DOCUMENTS / "scanner_supplier_review.md").read_text()
    body = parse_document(text.encode(), "scanner_supplier_review.md").text
    assert rows(items_of(body, date(2026, 3, 10))) == [
        ("decision", "Go with the Shenzhen plant for the first 5,000 units.", None, "agreed"),
        ("decision", "Keep Penang as the second source for the autumn run.", None, "agreed"),
        ("risk", "Customs delays at Rotterdam in April (high).", "high", None),
        ("risk", "The Shenzhen quote is in yuan; the exchange rate could add 4% to the unit cost.", None, None),
        ("task", "Lena to send the signed quote to Shenzhen tomorrow", "Lena", date(2026, 3, 11), "open"),
        ("task", "Marco: book the factory audit for the week of March 23", "Marco", date(2026, 3, 23), "open"),
        ("task", "Confirm the payment terms with finance (owner: Aisha)", "Aisha", None, "open"),
        ("task", "Draft the quality agreement", "Aisha", date(2026, 3, 18), "open"),
        ("task", "Share the audit checklist", "Marco", date(2026, 3, 13), "done"),
        ("task", "Ask Penang for a revised lead time", "Lena", None, "blocked"),
        ("opportunity", "The Shenzhen plant also makes charging docks; a bundle could save on freight.", None),
        ("decision", "Packaging stays recyclable cardboard.", None, "agreed"),
        ("task", "Tom to update the packaging spec by 2026-03-13", "Tom", date(2026, 3, 13), "open"),
        ("task", "Lena: call the freight forwarder", "Lena", None, "open"),
    ]
    # The summary's sentences are not items of any kind; the risk's cost keyword gives its category.
    assert not any("Both quotes" in item.description for item in items_of(body))
    assert items_of(body)[3].fields["category"] == "cost"


def test_risk_table_columns_fill_the_risk_fields():
    body = """## Risk register

| Risk | Likelihood | Impact | Mitigation | Owner |
|---|---|---|---|---|
| Customs hold at Rotterdam | High | Two weeks late | Ship via Antwerp | Marco |
"""
    (risk,) = items_of(body)
    assert (risk.kind, risk.description) == ("risk", "Customs hold at Rotterdam")
    assert risk.fields == {
        "category": "schedule",
        "likelihood": "high",
        "impact": "Two weeks late",
        "mitigation": "Ship via Antwerp",
    }


def test_sub_headings_group_tasks_by_owner_and_stay_in_the_section():
    body = """## Action items

### Dana
- Send the BOM by Friday

### Firmware
- Fix the OTA battery check

## Notes
- Dana will also look at the dimmer curve.
"""
    assert rows(items_of(body)) == [
        ("task", "Send the BOM by Friday", "Dana", date(2026, 3, 13), "open"),
        ("task", "Fix the OTA battery check", "Firmware", None, "open"),
    ]  # "## Notes" closes the section: its line is left to the rules


def test_plain_text_notes_labels_and_lines():
    body = (DOCUMENTS / "ops_weekly_notes.txt").read_text()
    parsed = parse_document(body.encode(), "ops_weekly_notes.txt")
    assert parsed.format == "text"
    assert rows(items_of(parsed.text, date(2026, 3, 11))) == [
        ("decision", "The rota tool goes live on April 1.", None, "agreed"),
        ("decision", "Overtime stays capped at 20 hours a month per person.", None, "agreed"),
        ("risk", "Two night supervisors leave in April and we have no replacements yet.", None, None),
        ("task", "Jo: import the March rota into the tool by Friday", "Jo", date(2026, 3, 13), "open"),
        ("task", "Alex: write the handover checklist", "Alex", None, "open"),
        ("task", "Kim to brief the night shift on the tool, due 2026-03-25", "Kim", date(2026, 3, 25), "open"),
    ]  # "Next meeting on 18 March." after the blank line is not an action item


def test_a_label_with_text_on_its_line_is_one_item():
    body = (
        "We walked through the pilot results.\nDecision: the pilot extends to the Lyon office.\n"
        "Risk: the Lyon network is not ready.\nThe team then went through the budget line by line.\n"
    )
    assert rows(items_of(body)) == [
        ("decision", "the pilot extends to the Lyon office.", None, "agreed"),
        ("risk", "the Lyon network is not ready.", None, None),
    ]


def test_a_label_s_list_ends_at_the_prose_after_it():
    body = """**Risks:**
- Customs delays at Rotterdam in April.
  Mitigation: ship via Antwerp.

The rest of the call was about the trade show.

- Booth artwork is due on the 20th.
"""
    assert rows(items_of(body)) == [
        ("risk", "Customs delays at Rotterdam in April. Mitigation: ship via Antwerp.", None, "ship via Antwerp."),
    ]


def test_a_risk_reported_closed_under_risks_is_not_a_new_risk_and_is_left_to_the_sentences():
    body = """## Risks

- The Snowflake credit risk is closed now that the agreement is signed.
- Customs is no longer a risk since we ship via Antwerp.
- If the hourly loads overlap the nightly batch, compute doubles.
"""
    items, covered = section_items(body, item_sections(body), None, MONDAY)
    assert [(i.kind, i.description) for i in items] == [
        ("risk", "If the hourly loads overlap the nightly batch, compute doubles.")
    ]
    closed = body.index("The Snowflake")
    assert not any(start <= closed < end for start, end in covered)


def test_what_is_not_an_item():
    body = """## Decisions

None this week.

## Risks
- N/A

## Action items
The following were agreed:

```
## Tasks
- this is a code sample, not a task
```
"""
    assert items_of(body) == []


def test_paragraph_sections_and_wrapped_lines():
    body = """## Decisions

The launch moves to May 19, because the certification lab is booked until
the end of April and the retail partners asked for a Tuesday.

We keep the aluminium housing.
"""
    assert [item.description for item in items_of(body)] == [
        "The launch moves to May 19, because the certification lab is booked until the end of April and the retail "
        "partners asked for a Tuesday.",
        "We keep the aluminium housing.",
    ]


def test_without_a_meeting_date_only_absolute_due_dates_resolve():
    body = "## Action items\n- Dana: send the BOM by Friday\n- Raj: order pads, due 2026-03-20\n"
    assert [item.fields["due_date"] for item in items_of(body, None)] == [None, date(2026, 3, 20)]


def test_the_rules_read_only_what_no_item_section_covers():
    body = "We decided to keep the housing.\n\n**Decisions:**\n- Ship on May 19\n\nRaj will order the pads.\n"
    sections = item_sections(body)
    items, covered = section_items(body, sections, None, MONDAY)
    stated = StatedItems(items, covered)

    def unit(text: str) -> Unit:
        start = body.index(text)
        return Unit(start, start + len(text), text, None, None)

    units = [unit("We decided to keep the housing."), unit("**Decisions:**\n- Ship on May 19"), unit("Raj will order the pads.")]
    assert [u.text for u in stated.outside(units)] == ["We decided to keep the housing.", "Raj will order the pads."]
    assert [(i.kind, i.description) for i in items] == [("decision", "Ship on May 19")]


# --- end to end: the offline extract stage on the real database ------------------------------------


@pytest.mark.slow
def test_extract_stage_stores_the_items_of_markdown_notes_once_each(db, local_embedder, settings):
    from rag.backfill.stages import run_named_stage
    from tests.backfill.conftest import ingest_file

    notes = DOCUMENTS / "lamp_launch_sync_2026-03-09.md"
    doc = ingest_file(db, notes, local_embedder, meeting_date=MONDAY)
    body = db.execute("SELECT body FROM documents WHERE id = %s", (doc,)).fetchone()[0]
    for stage in ("segment", "embed", "extract"):
        result = run_named_stage(db, settings, stage, 10, embedder=local_embedder)
        assert (result.processed, result.failed) == (1, 0), stage

    def stored(table, *columns):
        extra = "".join(f", {c}" for c in columns)
        return db.execute(
            f"SELECT method, description, start_char, end_char, segment_id{extra} FROM {table}"
            " WHERE document_id = %s ORDER BY start_char",
            (doc,),
        ).fetchall()

    decisions = stored("decisions", "owner", "status", "rationale")
    risks = stored("risks", "likelihood", "mitigation")
    tasks = stored("tasks", "assignee", "due_date", "status")
    assert stored("opportunities") == []
    assert [(r[0], r[1], r[5], r[6], r[7]) for r in decisions] == [
        ("rules", "We decided to keep the aluminium housing for the first batch.", None, "current", None),
        ("sections", "We move the public launch to May 19.", None, "current", None),
        (
            "sections",
            "The target cloud is AWS, not GCP, because the OTA service already runs there.",
            None,
            "current",
            "the OTA service already runs there",
        ),
        ("sections", "Firmware freeze is 2026-04-20; only fixes for blocking bugs after that.", None, "current", None),
        ("sections", "Retailer demo units ship with the 1.4 firmware (owner: Priya).", "Priya", "current", None),
    ]
    assert [(r[0], r[1].split(" (")[0], r[5], r[6]) for r in risks] == [
        (
            "sections",
            "If someone starts an OTA update with a low battery, the light could brick",
            "medium",
            "refuse updates below 30% charge.",
        ),
        ("sections", "The LED driver supplier has not confirmed the May allocation.", None, None),
        ("sections", "None of the current testers use Zigbee hubs from the other vendor.", None, None),
    ]
    assert [(r[0], r[5], r[6], r[7]) for r in tasks] == [
        ("rules", "Omar", None, "open"),  # "Omar will rerun the soak test ..." in the discussion
        ("sections", "Dana Kim", date(2026, 3, 16), "open"),
        ("sections", "Raj", None, "done"),
        ("sections", "omar", date(2026, 3, 13), "open"),
        ("sections", "Priya", date(2026, 3, 20), "open"),
        ("sections", None, None, "open"),
    ]
    assert tasks[1][1] == "Dana Kim: add the battery check to the OTA updater, due March 16"
    # Each item points at its own lines, in the segment of its heading.
    segments = dict(db.execute("SELECT id, title FROM segments WHERE document_id = %s", (doc,)).fetchall())
    for method, description, start, end, segment_id, *_ in decisions + risks + tasks:
        assert description.rstrip(".")[:30] in " ".join(body[start:end].split())
        if method == "sections":
            title = segments[segment_id]
            assert title in ("Decisions made", "Risks and issues", "Action Items"), description
    # The questions are not items of any kind.
    assert not any("white finish" in r[1] or "packaging artwork" in r[1] for r in decisions + risks + tasks)


@pytest.mark.slow
def test_with_a_model_configured_the_listed_lines_are_items_and_the_model_reads_only_the_rest(
    db, local_embedder, fake, llm_settings
):
    from rag.backfill.stages import run_named_stage
    from tests.backfill.conftest import ingest_file

    doc = ingest_file(db, DOCUMENTS / "lamp_launch_sync_2026-03-09.md", local_embedder, meeting_date=MONDAY)
    nothing = {"decisions": [], "risks": [], "opportunities": [], "tasks": [], "changes": []}
    fake.chat_responses.extend([nothing] * 3)
    for stage in ("segment", "embed", "extract"):
        result = run_named_stage(db, llm_settings, stage, 10, embedder=local_embedder)
        assert (result.processed, result.failed) == (1, 0), stage

    asked = [r["body"]["messages"][1]["content"] for r in fake.requests if r["path"] == "/v1/chat/completions"]
    # The title's, the discussion's and the open questions' lines; the three item sections need no model.
    assert len(asked) == 3 and not fake.chat_responses
    assert any("Omar will rerun the soak test" in text for text in asked)
    assert any("Should we offer a white finish at launch?" in text for text in asked)
    # listed lines are no numbered lines of the model's, only shown as recorded ("- decision: We move ...")
    for listed in ("We move the public launch", "LED driver supplier", "battery check to the OTA updater", "retailer FAQ"):
        assert all(listed not in text.split("\nSegment: ")[1] and listed in text.split("\nSegment: ")[0] for text in asked)
    assert all("\n- decision: We move the public launch to May 19.\n" in text for text in asked)
    counts = {
        table: db.execute(f"SELECT method, count(*) FROM {table} WHERE document_id = %s GROUP BY method", (doc,)).fetchall()
        for table in ("decisions", "risks", "opportunities", "tasks")
    }
    assert counts == {
        "decisions": [("sections", 4)],
        "risks": [("sections", 3)],
        "opportunities": [],
        "tasks": [("sections", 5)],
    }
