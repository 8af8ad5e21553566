"""The deployed stack, run from its artifacts: built once per session, its services once per module."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

import pytest

from tests.artifact.harness import Artifacts, Stack, build_artifacts, running_services


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Artifacts:
    # No CPython 3.12 is an error, not a skip: this is the only test of what ships.
    return build_artifacts(tmp_path_factory.mktemp("artifacts"))


@pytest.fixture(scope="module")
def stack(artifacts: Artifacts, database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    from moto.moto_api._internal.models import moto_api_backend

    # moto's server keeps its resources in this process: without a reset, a second module's stack finds the
    # first one's bucket and secrets (what moto's own /moto-api/reset does).
    moto_api_backend.reset()
    with running_services(database_url) as services:
        stack = Stack(artifacts, services, Path(tmp_path_factory.mktemp("lambda-logs")))
        yield stack
        # What each fresh process cost (pytest -s shows it; bench/cold_start.py measures it properly).
        print(json.dumps({"cold_starts": [asdict(c) for c in stack.cold_starts]}, indent=1))
