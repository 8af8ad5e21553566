"""Small modules and short functions: what ships (the library, the handlers, the local stack, the CDK app) stays
readable one concept a file. A module over the limit is split by concept, not trimmed."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO_ROOT

SHIPPED = ("layers/rag", "functions", "local/rag_local", "infra")
MAX_MODULE_LINES = 350
MAX_FUNCTION_LINES = 80


def sources() -> list[Path]:
    return sorted(p for folder in SHIPPED for p in (REPO_ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts)


def test_no_module_is_over_the_limit() -> None:
    found = sources()
    assert len(found) > 100  # the walk sees the tree
    long = {
        str(p.relative_to(REPO_ROOT)): n
        for p in found
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


def test_no_function_is_over_the_limit() -> None:
    long = {}
    for path in sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(REPO_ROOT)}:{node.name}"] = lines
    assert long == {}
