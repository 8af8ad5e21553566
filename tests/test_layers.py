"""Imports point downward: interface -> answers -> services -> store -> base.

The interface (rag.api: routes and their request and response models) maps HTTP to the library's own types at its
edge; the answering layer (rag.ask) has types of its own and never imports the API.

A module may import modules of its own layer and of the layers below, never above (checked
on the source, TYPE_CHECKING and function-level imports included: a lazy import is still a
dependency; so are `from rag import api`, which imports the module rag.api, and
importlib.import_module("rag.api")). The services (search, ingest, backfill, reembed) do not import each other, and the
library never imports the local tools (rag_local) or the handlers.
"""

from __future__ import annotations

import ast
from pathlib import Path

LIBRARY = Path(__file__).resolve().parents[1] / "layers"

# Lowest first; a module belongs to the layer of the longest prefix that names it.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("rag", "rag.config", "rag.errors", "rag.aws", "rag.index_text", "rag.parsing", "rag.chunking",
              "rag.embedding", "rag.events", "rag.queue_retry", "rag.llm", "rag.knowledge", "rag.timeline",
              "rag.validation")),
    ("store", ("rag.store",)),
    ("services", ("rag.search", "rag.ingest", "rag.meeting_fields", "rag.backfill", "rag.reembed")),
    ("answers", ("rag.ask",)),
    ("interface", ("rag.api", "rag.api.routes")),
)  # fmt: skip
SERVICES = ("rag.search", "rag.ingest", "rag.backfill", "rag.reembed")


def layer_of(module: str) -> int:
    best, rank = "", -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
                best, rank = prefix, index
    assert rank >= 0, f"{module} is in no layer: add it to LAYERS"
    return rank


def service_of(module: str) -> str | None:
    return next((s for s in SERVICES if module == s or module.startswith(s + ".")), None)


def is_library_module(name: str) -> bool:
    """``name`` is a module or package of the library (``rag.api``), not a name defined in one."""
    path = LIBRARY.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or path.is_dir()


def imported_modules(node: ast.AST) -> list[str]:
    """The modules an import statement or an importlib.import_module("...") call imports."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        # `from rag import api` imports the module rag.api; `from rag.config import Settings`, rag.config.
        submodules = [f"{node.module}.{alias.name}" for alias in node.names]
        return [name for name in submodules if is_library_module(name)] or [node.module]
    if (
        isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
            or (isinstance(node.func, ast.Name) and node.func.id in ("import_module", "__import__"))
        )
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return [node.args[0].value]
    return []


def imports_in(module: str, source: str) -> list[tuple[str, str, int]]:
    """(module, imported module, line) for every import of the project's own modules in ``source``."""
    return [
        (module, name, getattr(node, "lineno", 0))
        for node in ast.walk(ast.parse(source))
        for name in imported_modules(node)
        if name.split(".")[0] in ("rag", "rag_local", "functions")
    ]


def imports() -> list[tuple[str, str, int]]:
    """(importing module, imported module, line) for every import of the library's own modules."""
    found = []
    for path in sorted(LIBRARY.rglob("*.py")):
        parts = path.relative_to(LIBRARY).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found += imports_in(module, path.read_text(encoding="utf-8"))
    return found


def upward_imports(found: list[tuple[str, str, int]]) -> list[str]:
    return [
        f"{module}:{line} imports {name} ({LAYERS[layer_of(module)][0]} -> {LAYERS[layer_of(name)][0]})"
        for module, name, line in found
        if name.startswith("rag.") and layer_of(name) > layer_of(module)
    ]


def test_imports_point_downward():
    assert upward_imports(imports()) == []


def test_a_module_imported_by_name_from_its_package_counts_as_imported():
    source = "from rag import api, config\nfrom rag.config import Settings\n"
    assert imports_in("rag.store.documents", source) == [
        ("rag.store.documents", "rag.api", 1),
        ("rag.store.documents", "rag.config", 1),
        ("rag.store.documents", "rag.config", 2),
    ]
    assert upward_imports(imports_in("rag.store.documents", source)) == [
        "rag.store.documents:1 imports rag.api (store -> interface)"
    ]


def test_a_module_imported_through_importlib_counts_as_imported():
    source = (
        "import importlib\nfrom importlib import import_module\n"
        "def load():\n    importlib.import_module('rag.ask.answer')\n    return import_module('rag.api.routes')\n"
    )
    assert upward_imports(imports_in("rag.search.engine", source)) == [
        "rag.search.engine:4 imports rag.ask.answer (services -> answers)",
        "rag.search.engine:5 imports rag.api.routes (services -> interface)",
    ]


def test_the_services_do_not_import_each_other_and_the_library_never_imports_local_code():
    crossing = [
        f"{module}:{line} imports {name}"
        for module, name, line in imports()
        if (service_of(module) and service_of(name) and service_of(module) != service_of(name))
        or not name.startswith("rag")
        or name.split(".")[0] == "rag_local"
    ]
    assert crossing == []


def test_the_check_sees_what_it_checks():
    found = imports()
    assert len(found) > 100
    assert (
        "rag.api.search_routes",
        "rag.search.service",
        next(line for m, n, line in found if (m, n) == ("rag.api.search_routes", "rag.search.service")),
    ) in found
    assert (
        layer_of("rag.store.documents") < layer_of("rag.search.engine") < layer_of("rag.ask.tools") < layer_of("rag.api.models")
    )
