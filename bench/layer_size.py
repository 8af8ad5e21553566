"""Build the Lambda layer exactly as ``cdk synth`` does (pip for manylinux x86_64, CPython 3.12) and report its size.

    .venv/bin/python bench/layer_size.py [--rebuild] [--json]

The build is cached under .local/layer/<hash of the library and pins>; Lambda's limit is 250 MB unzipped for a
function and all its layers together, and 50 MB zipped for a direct upload (CDK uploads through S3).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[1])  # the repository root, so ``infra`` imports

from infra.bundling import build_layer, layer_hash  # noqa: E402
from infra.defaults import REPO_ROOT  # noqa: E402

LAMBDA_UNZIPPED_LIMIT_MB = 250.0
CACHE = REPO_ROOT / ".local" / "layer"


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
    """The built layer folder (holding ``python/``), built once per library/pins hash."""
    folder = CACHE / layer_hash()[:16]
    if rebuild or not (folder / "python" / "rag").is_dir():
        shutil.rmtree(folder, ignore_errors=True)
        partial = folder.with_suffix(".partial")
        shutil.rmtree(partial, ignore_errors=True)
        build_layer(partial)
        partial.rename(folder)
    return folder


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
