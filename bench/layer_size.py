"""Build the Lambda layer exactly as ``cdk synth`` does (pip for manylinux x86_64, CPython 3.12) and report its size.

    .venv/bin/python bench/layer_size.py [--rebuild] [--json]

The build is cached under .local/layer/<hash of the library and pins> (the dependencies once per pins hash, under
.local/layer/deps-<hash>). Lambda's limit is 250 MB unzipped for a function and all its layers together, and 50 MB
zipped for a direct upload (CDK uploads through S3).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[1])  # the repository root, so ``infra`` imports

from infra.bundling import add_library, dependencies_hash, install_dependencies, layer_hash  # noqa: E402
from infra.defaults import REPO_ROOT  # noqa: E402

LAMBDA_UNZIPPED_LIMIT_MB = 250.0
CACHE = REPO_ROOT / ".local" / "layer"
KEPT_BUILDS = 4  # layer folders kept (they share the dependencies' files through hard links)


@dataclass(frozen=True)
class LayerSize:
    path: str
    unzipped_mb: float
    zipped_mb: float
    files: int
    largest_packages_mb: dict[str, float]

    @property
    def share_of_limit(self) -> float:
        return self.unzipped_mb / LAMBDA_UNZIPPED_LIMIT_MB


def cached_layer(*, rebuild: bool = False) -> Path:
    """The built layer folder (holding ``python/``), built once per library/pins hash.

    The same two steps as ``build_layer`` (what the CDK app runs): the dependencies are installed once per pins
    hash and kept under ``deps-<hash>``; each library version starts from a hard-linked copy of them.
    """
    folder = CACHE / layer_hash()[:16]
    if rebuild or not (folder / "python" / "rag").is_dir():
        dependencies = cached_dependencies(rebuild=rebuild)
        shutil.rmtree(folder, ignore_errors=True)
        partial = folder.with_suffix(f".partial-{os.getpid()}")
        shutil.rmtree(partial, ignore_errors=True)
        # Hard links: the copy costs no space, and precompiling replaces files (new inodes), never edits the cache's.
        shutil.copytree(dependencies, partial / "python", copy_function=os.link)
        add_library(partial / "python")
        try:
            partial.rename(folder)
        except OSError:  # another process built the same layer meanwhile: keep theirs
            shutil.rmtree(partial, ignore_errors=True)
        prune(keep=folder)
    return folder


def cached_dependencies(*, rebuild: bool = False) -> Path:
    """``install_dependencies``' output for the current pins (pip for Lambda's platform: the slow half)."""
    folder = CACHE / f"deps-{dependencies_hash()[:16]}"
    if rebuild or not folder.is_dir():
        shutil.rmtree(folder, ignore_errors=True)
        partial = folder.with_suffix(f".partial-{os.getpid()}")
        shutil.rmtree(partial, ignore_errors=True)
        install_dependencies(partial)
        try:
            partial.rename(folder)
        except OSError:
            shutil.rmtree(partial, ignore_errors=True)
    return folder


def prune(*, keep: Path, builds: int = KEPT_BUILDS) -> None:
    """Drop all but the newest ``builds`` layer folders (each library edit makes one)."""
    layers = sorted(
        (p for p in CACHE.iterdir() if p.is_dir() and not p.name.startswith("deps-") and ".partial" not in p.name),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    for old in layers[builds:]:
        if old != keep:
            shutil.rmtree(old, ignore_errors=True)


def measure(folder: Path) -> LayerSize:
    files = [p for p in folder.rglob("*") if p.is_file()]
    unzipped = sum(p.stat().st_size for p in files)
    archive = folder.with_suffix(".zip")
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path in files:
            zf.write(path, path.relative_to(folder))
    zipped = archive.stat().st_size
    archive.unlink()
    packages: dict[str, int] = {}
    for path in files:
        top = path.relative_to(folder / "python").parts[0]
        packages[top] = packages.get(top, 0) + path.stat().st_size
    largest = dict(sorted(((k, round(v / 1e6, 1)) for k, v in packages.items()), key=lambda kv: -kv[1])[:8])
    return LayerSize(str(folder), round(unzipped / 1e6, 1), round(zipped / 1e6, 1), len(files), largest)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rebuild", action="store_true", help="ignore the cached build")
    parser.add_argument("--json", action="store_true", help="print the measurement as JSON")
    args = parser.parse_args(argv)
    size = measure(cached_layer(rebuild=args.rebuild))
    if args.json:
        print(json.dumps({**asdict(size), "limit_mb": LAMBDA_UNZIPPED_LIMIT_MB}, indent=2))
    else:
        print(f"layer {size.path}")
        print(f"  unzipped {size.unzipped_mb} MB ({size.share_of_limit:.0%} of Lambda's {LAMBDA_UNZIPPED_LIMIT_MB:.0f} MB)")
        print(f"  zipped   {size.zipped_mb} MB, {size.files} files")
        for name, mb in size.largest_packages_mb.items():
            print(f"  {mb:7.1f} MB  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
