"""The page in a real browser: Debian's Chromium driven by Playwright, against the local stack of `rag up`.

One stack for the whole browser suite: the local API (which serves the page), PostgreSQL, moto (S3 + SQS)
and the queue worker with the backfill that follows it, in one `rag_local.services` process on free ports;
the example transcripts ingested once. Each test gets a fresh browser context (its own sessionStorage).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.conftest import REPO_ROOT

CHROMIUM = "/usr/bin/chromium"
# Headless, and nothing that reaches out: the machine's network is closed, and Chromium's own background
# connections would be refused one by one.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
API_KEY = "dev-local-key"  # Settings.api.api_keys' default: tenant "default"
PROJECT = "remote-control"
EXAMPLES = REPO_ROOT / "examples" / "transcripts"
SCREENSHOTS = REPO_ROOT / "docs" / "images"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for(condition: Callable[[], Any], what: str, timeout: float = 120) -> Any:
    """Poll until ``condition`` is truthy (the bound only stops a hung test; nothing is timed)."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.3)
    return value


@dataclass(frozen=True)
class Stack:
    url: str  # the page, served by the local query API
    database_url: str
    bucket: str

    def api(self, path: str, body: Any = None) -> Any:
        """A GET (or, with a body, a POST) on the query API with the local key, as JSON: what the page is checked against."""
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"}
        request = urllib.request.Request(self.url + path, data=data, headers=headers)
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def document_id(self, object_key: str) -> str:
        with psycopg.connect(self.database_url) as conn:
            row = conn.execute("SELECT id FROM documents WHERE object_key = %s", (object_key,)).fetchone()
        assert row is not None, f"no document {object_key}"
        return str(row[0])

    def statuses(self, project: str) -> dict[str, str]:
        with psycopg.connect(self.database_url) as conn:
            rows = conn.execute("SELECT object_key, status FROM documents WHERE project_id = %s", (project,)).fetchall()
        return dict(rows)


@pytest.fixture(scope="session")
def stack(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """`rag up`'s services on free ports with the session's database, and the examples ingested and extracted."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed (Debian package chromium; `make test` installs it)")
    from rag.config import Settings
    from rag_local import supervisor

    local = tmp_path_factory.mktemp("web") / "local"
    moto_port, api_port = free_port(), free_port()
    bucket = "web-documents"
    env = {
        "DATABASE_URL": database_url,
        "RAG_LOCAL_DIR": str(local),
        "RAG_LOCAL_MOTO_PORT": str(moto_port),
        "RAG_LOCAL_API_PORT": str(api_port),
        "RAG_LOCAL_BUCKET": bucket,
        "RAG_UPLOAD_BUCKET": bucket,
        "RAG_WEB_AUTH": "api_key",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{moto_port}",
    }
    saved = dict(os.environ)
    os.environ.update(env)  # what the services process starts with (and Settings reads here)
    for name in ("RAG_API_KEYS", "RAG_LLM_PROVIDER", "RAG_EMBEDDING_PROVIDER"):
        os.environ.pop(name, None)  # the local defaults: the dev key, extractive answers, the local model
    try:
        settings = Settings()
        supervisor.start_services(settings, timeout=180)
    finally:
        child_env = dict(os.environ)
        os.environ.clear()
        os.environ.update(saved)
    try:
        ingest = subprocess.run(
            [sys.executable, "-m", "rag_local.cli", "ingest", str(EXAMPLES), "--project", PROJECT, "--quiet", "--timeout", "180"],
            env=child_env, capture_output=True, text=True, timeout=240, cwd=REPO_ROOT,
        )  # fmt: skip
        assert ingest.returncode == 0, ingest.stdout + ingest.stderr
        found = Stack(f"http://127.0.0.1:{api_port}", database_url, bucket)
        expected = len(list(EXAMPLES.iterdir()))
        wait_for(
            lambda: (s := found.statuses(PROJECT)) and len(s) == expected and set(s.values()) == {"extracted"},
            "the examples to be extracted (the brief and the meeting view's items come from the backfill)",
        )
        yield found
    finally:
        supervisor.stop_services(settings)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed (Debian package chromium; `make test` installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


class PageProblems(list[str]):
    """What went wrong in the page: uncaught errors and Content-Security-Policy refusals (the test fails on any)."""


@pytest.fixture
def problems() -> PageProblems:
    return PageProblems()


def unexpected(message: Any) -> bool:
    """A console message that means trouble: a CSP refusal or any error but an HTTP status (those are asserted)."""
    if "Content Security Policy" in message.text:
        return True
    return bool(message.type == "error" and not message.text.startswith("Failed to load resource: the server responded"))


def open_page(browser: Any, problems: PageProblems, **context_options: Any) -> Any:
    """A fresh context (empty sessionStorage) and page, errors and CSP refusals collected into ``problems``."""
    context = browser.new_context(**{"viewport": {"width": 1280, "height": 800}, **context_options})
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on("console", lambda message: problems.append(f"console: {message.text}") if unexpected(message) else None)
    return page


def sign_in(page: Any, stack: Stack, hash_route: str = "#/") -> None:
    page.goto(f"{stack.url}/{hash_route}")
    page.fill("#api-key", API_KEY)
    page.keyboard.press("Enter")
    page.wait_for_selector("#key-form", state="detached")


@pytest.fixture
def page(browser: Any, stack: Stack, problems: PageProblems) -> Iterator[Any]:
    """A signed-in page (desktop size); the test fails if the page logged an error or a CSP refusal."""
    opened = open_page(browser, problems)
    sign_in(opened, stack)
    yield opened
    opened.context.close()
    assert list(problems) == []


def screenshot(page: Any, name: str, full_page: bool = False) -> None:
    """A picture of a screen for docs/web.md and the README (taken by every run, so they show the page as it is)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"web-{name}.png"), full_page=full_page, animations="disabled")


def in_view(page: Any, selector: str) -> bool:
    """Whether the element's box lies within the viewport (below the sticky bar)."""
    return bool(
        page.eval_on_selector(
            selector,
            """e => { const r = e.getBoundingClientRect();
                      return r.top >= 0 && r.bottom <= window.innerHeight && r.height > 0; }""",
        )
    )


def copy_fixture(source: Path, directory: Path, name: str) -> Path:
    target = directory / name
    shutil.copyfile(source, target)
    return target
