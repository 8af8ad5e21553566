"""Every benchmark script still starts: `--help` exits 0 with its usage (they import each other and the library)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
MODULES = {"common.py", "bare_pgvector.py"}  # imported by the scripts, not run
SCRIPTS = sorted(p for p in BENCH.glob("*.py") if p.name not in MODULES)


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_the_script_starts_and_explains_itself(script):
    done = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("usage:")


def test_every_script_is_checked():
    assert {p.name for p in SCRIPTS} >= {"query_latency.py", "peer_stores.py", "write_path.py", "retrieval_variants.py"}


def import_peer_stores():
    sys.path.insert(0, str(BENCH))
    try:
        import peer_stores  # no peer is imported until a peer is set up: this runs in the project's venv
    finally:
        sys.path.remove(str(BENCH))
    return peer_stores


def test_the_peers_table_scores_each_path_against_the_exact_ids_and_counts_short_answers():
    peer_stores = import_peer_stores()
    exact = [list(range(10)), list(range(10, 20))]
    full = peer_stores.timing("full", lambda i, projects: exact[i])
    short = peer_stores.timing("short", lambda i, projects: exact[i][:3] + [99])

    lines = peer_stores.measure([full, short], exact, "10%", ["p10"])

    assert [line.split()[1] for line in lines] == ["full", "short"]
    assert lines[0].split()[4] == "1.000" and "rows returned" not in lines[0]
    assert lines[1].split()[4] == "0.300" and lines[1].endswith("rows returned: mean 4.0, min 4")


def test_the_peers_are_also_timed_on_the_queries_where_every_path_returned_ten_rows():
    peer_stores = import_peer_stores()
    exact = [list(range(k, k + 10)) for k in (0, 10, 20)]
    full = peer_stores.timing("full", lambda i, projects: exact[i])
    short_once = peer_stores.timing("short", lambda i, projects: exact[i][:4] if i == 1 else exact[i])

    lines = peer_stores.measure([full, short_once], exact, "10%", ["p10"])

    assert "(the 2 queries where every path returned 10 rows)" in lines[2]
    assert [line.split()[1] for line in lines[3:]] == ["full", "short"] and len(lines[3].split()) == 4
