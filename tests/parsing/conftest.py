"""Helpers for the parser tests: the sample files in ``tests/fixtures/parsing``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from rag.parsing import ParsedDocument, parse_document

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "parsing"


@pytest.fixture
def fixture_bytes() -> Callable[[str], bytes]:
    return lambda name: (FIXTURES / name).read_bytes()


@pytest.fixture
def parse_fixture() -> Callable[..., ParsedDocument]:
    """Parse a sample file, optionally under another name (to test detection)."""

    def parse(name: str, as_name: str | None = None) -> ParsedDocument:
        return parse_document((FIXTURES / name).read_bytes(), as_name or name)

    return parse
