"""Every import in the library the layer ships resolves in Lambda, on paths the flows do not reach too.

The flows (test_deployed_flows.py) run what a deployed stack runs; this reads every ``import`` statement of the
layer's ``rag`` package, top level and inside functions, and asks CPython 3.12 with only the layer and the
runtime's packages on its path where each module would come from.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.artifact.harness import Artifacts

pytestmark = pytest.mark.slow

# Modules of the local embedding model (``RAG_EMBEDDING_PROVIDER=local``: ``rag up``, never a deployed stack,
# whose providers are openai or bedrock): torch, onnxruntime, tokenizers and numpy come with the `local` extra.
LOCAL_MODEL_MODULES = {
    "rag/embedding/local.py",
    "rag/embedding/model_files.py",
    "rag/embedding/onnx_encoder.py",
    "rag/embedding/onnx_files.py",
}


def imported_modules(package: Path) -> dict[str, set[str]]:
    """Top-level module name -> the files (relative to the layer) that import it."""
    found: dict[str, set[str]] = {}
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], set()).add(str(path.relative_to(package.parent)))
    return found


def test_every_module_the_layer_imports_ships_with_it_or_with_the_runtime(artifacts: Artifacts) -> None:
    imports = imported_modules(artifacts.layer / "rag")
    probe = (
        "import importlib.util, json, sys\n"
        f"names = {sorted(imports)!r}\n"
        "print(json.dumps([n for n in names if n not in sys.stdlib_module_names and importlib.util.find_spec(n) is None]))\n"
    )
    environment = {"PATH": os.environ["PATH"], "PYTHONPATH": f"{artifacts.layer}{os.pathsep}{artifacts.runtime}",
                   "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1"}  # fmt: skip
    result = subprocess.run([artifacts.python, "-S", "-P", "-c", probe], env=environment, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    missing = {name: imports[name] for name in json.loads(result.stdout)}

    assert "rag" in imports and "psycopg" in imports  # the walk found the library's imports
    outside_the_local_model = {
        name: files - LOCAL_MODEL_MODULES for name, files in missing.items() if files - LOCAL_MODEL_MODULES
    }
    assert outside_the_local_model == {}
    assert "numpy" in missing  # what the local model needs stays out of the layer
