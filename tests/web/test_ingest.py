"""Upload from the page (a presigned PUT under the caller's tenant), then see each file ingested, or failed with its error."""

from __future__ import annotations

import psycopg
import pytest

from tests.conftest import FIXTURES
from tests.web.conftest import PROJECT, copy_fixture, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def row(stack, key: str) -> tuple[str, str | None] | None:
    with psycopg.connect(stack.database_url) as conn:
        return conn.execute("SELECT status, error FROM documents WHERE object_key = %s", (key,)).fetchone()


def test_uploaded_files_are_ingested_or_fail_with_their_error_and_the_list_shows_them(page, stack, tmp_path):
    good = copy_fixture(FIXTURES / "parsing" / "standup.vtt", tmp_path, "2026-11-16-standup.vtt")
    bad = copy_fixture(FIXTURES / "parsing" / "encrypted.pdf", tmp_path, "locked-minutes.pdf")
    page.goto(f"{stack.url}/#/p/{PROJECT}/ingest")
    page.wait_for_selector(".docs")
    counts = stack.api(f"/v1/documents?project_id={PROJECT}")["counts"]
    assert f"searchable: {counts['embedded']}" in page.inner_text(".counts").lower()

    page.set_input_files("#files", [str(good), str(bad)])
    page.click("#upload-form button[type=submit]")
    page.wait_for_selector(".progress li.done", timeout=120_000)
    page.wait_for_selector(".progress li.failed", timeout=120_000)

    prefix = f"tenants/default/projects/{PROJECT}"  # the caller's tenant (the key's), never one the page names
    ingested = row(stack, f"{prefix}/{good.name}")
    failed = row(stack, f"{prefix}/{bad.name}")
    assert ingested is not None and ingested[0] in ("embedded", "extracted")
    assert failed is not None and failed[0] == "failed" and failed[1]
    progress = page.locator(".progress li")
    assert (
        progress.filter(has_text=good.name)
        .inner_text()
        .endswith(f"ingested ({'searchable' if ingested[0] == 'embedded' else 'extracted'})")
    )
    assert progress.filter(has_text=bad.name).inner_text().endswith(f"failed: {failed[1]}")
    # The list shows both, the failure with its error.
    failure = page.locator(".docs li.failed", has_text=bad.name)
    assert failure.locator(".error-text").inner_text() == failed[1]
    assert page.locator(".docs li", has_text="standup").count() >= 1
    screenshot(page, "ingest", full_page=True)
