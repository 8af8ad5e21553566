"""Every benchmark script still starts: `--help` exits 0 with its usage (they import each other and the library)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
SCRIPTS = sorted(p for p in BENCH.glob("*.py") if p.name != "common.py")


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_the_script_starts_and_explains_itself(script):
    done = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("usage:")


def test_every_script_is_checked():
    assert {p.name for p in SCRIPTS} >= {"query_latency.py", "peer_stores.py", "write_path.py", "retrieval_variants.py"}
