"""Local (Docker-free) bundling: the library layer via pip for Lambda's platform, and plain file copies.

CDK calls ``try_bundle`` at synth; ``-c aws:cdk:bundling-stacks=[]`` (the unit tests) skips it, and the
asset hashes below are computed from the sources, so a skipped bundle still gets a stable, honest hash.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterable, Sequence
from pathlib import Path

import aws_cdk as cdk
import jsii

from infra.defaults import REPO_ROOT

LIBRARY_DIR = REPO_ROOT / "layers" / "rag"
CONSTRAINTS = REPO_ROOT / "constraints.txt"
PYPROJECT = REPO_ROOT / "pyproject.toml"
# Lambda's Python runtime ships these (and their version is AWS's): leaving them out saves ~30 MB.
RUNTIME_PROVIDED = ("boto3", "botocore", "s3transfer")
# Never needed at run time in Lambda.
STRIP_DIRS = ("__pycache__", "tests")  # before precompiling: no stale 3.11 bytecode
# The CA bundle the library verifies RDS and RDS Proxy with (sslmode=verify-full): data, copied with the library.
LAYER_CA_BUNDLE = Path("rag") / "certs" / "rds-ca-bundle.pem"
# Lambda's python3.12 runtime is Amazon Linux 2023 (glibc 2.34): manylinux_2_28 wheels run there too
# (tiktoken 0.14 ships no manylinux2014 wheel).
LAMBDA_PLATFORM = (
    "--platform", "manylinux2014_x86_64", "--platform", "manylinux_2_28_x86_64",
    "--implementation", "cp", "--python-version", "3.12",
)  # fmt: skip


def find_python312() -> str | None:
    """A CPython 3.12 on this machine (RAG_LAYER_PYTHON312, pyenv's, or on PATH), to precompile the layer."""
    import glob
    import os

    candidates = [
        os.environ.get("RAG_LAYER_PYTHON312"),
        *sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.12*/bin/python3.12")), reverse=True),
        shutil.which("python3.12"),
    ]
    for candidate in filter(None, candidates):
        probe = subprocess.run(
            [candidate, "-c", "import sys; print(sys.implementation.name, *sys.version_info[:2])"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if probe.returncode == 0 and probe.stdout.split() == ["cpython", "3", "12"]:
            return candidate
    return None


def runtime_requirements() -> list[str]:
    """pyproject's ``[project].dependencies``: what the library needs at run time, nothing more."""
    return list(tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"])


def tree_hash(paths: Iterable[Path], *, extra: Sequence[str] = ()) -> str:
    """SHA-256 over the relative names and bytes of every file under ``paths`` (caches skipped)."""
    digest = hashlib.sha256()
    for root in paths:
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for path in files:
            if "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            digest.update(str(path.relative_to(REPO_ROOT)).encode())
            digest.update(path.read_bytes())
    for item in extra:
        digest.update(item.encode())
    return digest.hexdigest()


def layer_hash() -> str:
    # The recipe (this file) is part of the hash: a change to how the layer is built makes a new asset.
    return tree_hash([LIBRARY_DIR, CONSTRAINTS, Path(__file__)], extra=[*runtime_requirements(), *LAMBDA_PLATFORM])


def dependencies_hash() -> str:
    """What ``install_dependencies`` depends on: the pins, the requirements, the platform and this recipe."""
    return tree_hash([CONSTRAINTS, Path(__file__)], extra=[*runtime_requirements(), *LAMBDA_PLATFORM])


def build_layer(output_dir: Path, *, python: str = sys.executable) -> Path:
    """Install the runtime dependencies for Lambda (manylinux, CPython 3.12) and the library into ``python/``."""
    target = output_dir / "python"
    install_dependencies(target, python=python)
    add_library(target)
    return target


def install_dependencies(target: Path, *, python: str = sys.executable) -> None:
    """The first half of ``build_layer``: the runtime dependencies, minus what Lambda's runtime ships."""
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile",
            "--target", str(target), *LAMBDA_PLATFORM, "--only-binary=:all:",
            "-c", str(CONSTRAINTS), *runtime_requirements(),
        ],
        check=True,
    )  # fmt: skip
    for name in RUNTIME_PROVIDED:
        for path in target.glob(f"{name}"):
            shutil.rmtree(path)
        for path in target.glob(f"{name}-*.dist-info"):
            shutil.rmtree(path)
    shutil.rmtree(target / "bin", ignore_errors=True)  # console scripts of dependencies


def add_library(target: Path) -> None:
    """The second half of ``build_layer``: the library next to its dependencies, then bytecode for everything."""
    shutil.copytree(LIBRARY_DIR, target / "rag", ignore=shutil.ignore_patterns(*STRIP_DIRS, "*.pyc"))
    if not (target / LAYER_CA_BUNDLE).is_file():  # without it every database connection in AWS fails
        raise FileNotFoundError(f"{LIBRARY_DIR / 'certs'} lost its CA bundle: the layer needs {LAYER_CA_BUNDLE}")
    for name in STRIP_DIRS:
        for path in sorted(target.rglob(name), reverse=True):
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
    precompile(target)


def precompile(target: Path) -> bool:
    """Bytecode for CPython 3.12: /opt is read-only in Lambda, so without it every cold start compiles
    (measured: the query handler imports in 0.4 s instead of 0.8 s). Skipped when no 3.12 is at hand."""
    python312 = find_python312()
    if python312 is None:
        print("layer: no CPython 3.12 found, bytecode left to Lambda (slower cold starts)", file=sys.stderr)
        return False
    subprocess.run(
        [python312, "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash", str(target)],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    return True


@jsii.implements(cdk.ILocalBundling)
class LayerBundler:
    """The layer without Docker: pip for Lambda's platform on this machine."""

    def try_bundle(self, output_dir: str, *, image: cdk.DockerImage, **_: object) -> bool:
        build_layer(Path(output_dir))
        return True


@jsii.implements(cdk.ILocalBundling)
class CopyBundler:
    """Copies files and folders (relative to the repository) into the asset, e.g. a handler and ``sql/``."""

    def __init__(self, files: dict[str, Path]):
        self.files = files  # name in the asset -> source path

    def try_bundle(self, output_dir: str, *, image: cdk.DockerImage, **_: object) -> bool:
        for name, source in self.files.items():
            destination = Path(output_dir) / name
            if source.is_dir():
                shutil.copytree(source, destination, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                destination.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, destination)
        return True


def local_bundling(local: cdk.ILocalBundling) -> cdk.BundlingOptions:
    # The image is required by the API but never pulled: local bundling always succeeds or raises.
    return cdk.BundlingOptions(image=cdk.DockerImage.from_registry("local-bundling-only"), local=local)
