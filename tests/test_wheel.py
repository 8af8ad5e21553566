"""A non-editable install carries every module of ``rag`` and ``rag_local``, and each imports from it.

The editable install used for development finds any file under layers/ and local/, so a package
missing from pyproject's configuration only shows in a built wheel: this builds one, offline.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SOURCE_ROOTS = {"rag": REPO_ROOT / "layers" / "rag", "rag_local": REPO_ROOT / "local" / "rag_local"}
DATA_FILES = {"rag/py.typed", "rag/certs/rds-ca-bundle.pem", "rag/backfill/sentence_model.json"} | {
    f"rag/web/static/{path.name}" for path in (SOURCE_ROOTS["rag"] / "web" / "static").iterdir()
}  # the web page's files, served by the query API


def source_modules() -> dict[str, str]:
    """Dotted module name -> its path inside a wheel, for every .py file under the package roots."""
    modules = {}
    for package, root in SOURCE_ROOTS.items():
        for path in sorted(root.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            relative = Path(package, path.relative_to(root))
            parts = relative.with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules[name] = relative.as_posix()
    return modules


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The project's wheel, built from a copy of its sources (no build/ left in the checkout, no network)."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO_ROOT / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for root in SOURCE_ROOTS.values():
        shutil.copytree(root, source / root.relative_to(REPO_ROOT), ignore=ignore)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", str(out), str(source)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    (built,) = out.glob("meeting_rag-*.whl")
    return built


def test_the_wheel_holds_every_module_and_the_package_data(wheel: Path):
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        entry_points = archive.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    missing = sorted(set(source_modules().values()) - names) + sorted(DATA_FILES - names)
    assert not missing, f"not in the wheel (pyproject's [tool.setuptools.packages.find] / package-data): {missing}"
    assert "rag = rag_local.cli:main" in entry_points


def test_every_module_imports_from_the_installed_wheel(wheel: Path, tmp_path: Path):
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q", "--target", str(target), str(wheel)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    # A fresh interpreter with the wheel's copy first on sys.path: each module must load from there.
    script = (
        "import importlib, json, sys\n"
        "target, names = sys.argv[1], json.loads(sys.argv[2])\n"
        "sys.path.insert(0, target)\n"
        "elsewhere = {}\n"
        "for name in names:\n"
        "    module = importlib.import_module(name)\n"
        "    if not module.__file__.startswith(target):\n"
        "        elsewhere[name] = module.__file__\n"
        "print(json.dumps(elsewhere))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(target), json.dumps(sorted(source_modules()))],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout) == {}, "modules imported from outside the installed wheel"
