"""ONNX files of a verified local model: exported once into the model cache, then reused.

No upstream publishes an ONNX file of these models that we could check against a
checksum, so the file is derived here from the weights ``rag.embedding.model_files`` has
verified: torch traces the transformer once (the legacy TorchScript exporter, which needs
neither ``onnxscript`` nor a network), and ``onnxruntime.quantization`` derives the int8
variant from that file. Only the ONNX path's first use on a machine needs torch.

A cached file is named by what made it and by its own content:
``<model>-<weights sha256[:12]>-<variant>-<settings digest>.<file sha256>.onnx``. The first
part changes whenever the weights or the export settings do (so a stale file is never
picked up); the last lets every load check the bytes it is about to run: a truncated or
damaged file does not match its name, is deleted and built again. Files are written to a
temporary name beside the target and renamed into place, so two processes exporting at
once both end with a whole file (and a lock file keeps the second from exporting again).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rag.embedding.local_models import LocalModel

logger = logging.getLogger(__name__)

Variant = Literal["fp32", "int8"]

# What shapes the exported graph. Change a value (or FORMAT, when this module's export
# code changes) and every cached file's name changes with it.
EXPORT_SETTINGS: dict[str, object] = {
    "format": 1,
    "exporter": "torchscript",  # torch.onnx.export(dynamo=False)
    "opset": 17,
    "attention": "eager",  # traced as plain matrix products: no mask shortcut baked into the graph
    "output": "last_hidden_state",  # pooling and normalization run outside the graph
}
QUANTIZE_SETTINGS: dict[str, object] = {
    "method": "quantize_dynamic",
    "weight_type": "QInt8",
    "per_channel": True,  # one scale per output channel: mean cosine to fp32 .928 -> .992 on transcript chunks
    "reduce_range": False,  # 7-bit weights lose more (.80 per tensor) and this CPU class has VNNI anyway
    # Kept in fp32: the feed-forward output projections of the first half of the layers, where
    # the error grows most on its way up (docs/embedding-runtime.md): mean cosine to fp32 .992 -> .996.
    "fp32_nodes": "feed-forward output, first half of the layers",
}
# A transformer layer's feed-forward output projection, as torch's exporter names it (BERT and MPNet alike).
_FFN_OUTPUT = re.compile(r"/layer\.(\d+)/output/dense/MatMul$")


class OnnxExportError(RuntimeError):
    """The ONNX file cannot be built here (torch or onnx missing, or the export failed)."""


@dataclass(frozen=True)
class OnnxFile:
    path: Path
    content: bytes  # the verified bytes: what the session loads, never re-read from disk


def settings_digest(variant: Variant) -> str:
    settings: dict[str, object] = {"export": EXPORT_SETTINGS}
    if variant == "int8":
        settings["quantize"] = QUANTIZE_SETTINGS
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:10]


def file_prefix(model: LocalModel, variant: Variant) -> str:
    """The name every cached file of ``model``/``variant`` starts with."""
    weights = model.sha256["model.safetensors"][:12]
    return f"{model.name}-{weights}-{variant}-{settings_digest(variant)}"


def onnx_file(model: LocalModel, model_directory: Path, cache_dir: Path, variant: Variant) -> OnnxFile:
    """The verified ONNX file of ``model`` (its weights in ``model_directory``, already verified), built if missing."""
    folder = cache_dir / "onnx"
    prefix = file_prefix(model, variant)
    found = _cached(folder, prefix)
    if found is not None:
        return found
    folder.mkdir(parents=True, exist_ok=True)
    with _lock(folder / f"{prefix}.lock"):
        found = _cached(folder, prefix)  # another process may have built it while we waited
        if found is not None:
            return found
        if variant == "fp32":
            logger.info("exporting %s to ONNX into %s (once per machine)", model.name, folder)
            _write(folder, prefix, lambda target: export_fp32(model, model_directory, target))
        else:
            source = onnx_file(model, model_directory, cache_dir, "fp32")
            logger.info("quantizing %s to int8 into %s (once per machine)", model.name, folder)
            _write(folder, prefix, lambda target: quantize_int8(source.path, target))
        found = _cached(folder, prefix)
        if found is None:  # pragma: no cover - the file was just written and checked
            raise OnnxExportError(f"the ONNX file {prefix} vanished right after it was written to {folder}")
        return found


def _cached(folder: Path, prefix: str) -> OnnxFile | None:
    """The first file of ``prefix`` whose bytes match its name; files that do not are removed."""
    if not folder.is_dir():
        return None
    for path in sorted(folder.glob(f"{prefix}.*.onnx")):
        expected = path.name[len(prefix) + 1 : -len(".onnx")]
        try:
            content = path.read_bytes()
        except FileNotFoundError:  # removed by a process that found it damaged
            continue
        if hashlib.sha256(content).hexdigest() == expected:
            return OnnxFile(path, content)
        logger.warning("removing damaged ONNX file %s (its content no longer matches its name)", path)
        path.unlink(missing_ok=True)
    return None


def _write(folder: Path, prefix: str, build: Any) -> Path:
    """Build into a temporary file beside the target, then rename it to its content-addressed name."""
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{prefix}.", suffix=".partial")
    os.close(handle)
    scratch = Path(temporary)
    try:
        build(scratch)
        scratch.chmod(0o644)  # mkstemp's 0600 would hide a shared cache from other users
        digest = hashlib.sha256(scratch.read_bytes()).hexdigest()
        target = folder / f"{prefix}.{digest}.onnx"
        os.replace(scratch, target)  # atomic: readers see no file or the whole file
        return target
    finally:
        scratch.unlink(missing_ok=True)


@contextlib.contextmanager
def _lock(path: Path) -> Iterator[None]:
    """An exclusive lock between processes (and threads: each takes its own descriptor)."""
    with path.open("a") as stream:
        fcntl.flock(stream.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(stream.fileno(), fcntl.LOCK_UN)


def export_fp32(model: LocalModel, model_directory: Path, target: Path) -> None:
    """Trace the transformer (token embeddings out; pooling stays outside) into ``target``."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    try:
        import torch
        from transformers import AutoModel
    except ImportError as exc:
        raise OnnxExportError(
            f"the ONNX file of {model.name} is built once from its weights with torch and transformers,"
            f" which are not installed here ({exc}); install the local extra (pip install 'meeting-rag[local]')"
            " or copy a cache directory's onnx/ folder from a machine that has them"
        ) from exc
    import warnings

    transformer = AutoModel.from_pretrained(str(model_directory), local_files_only=True, attn_implementation="eager")
    transformer.eval()
    takes_token_types = model_takes_token_types(transformer)
    names = ["input_ids", "attention_mask"] + (["token_type_ids"] if takes_token_types else [])

    class TokenEmbeddings(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, *inputs: Any) -> Any:
            return self.transformer(**dict(zip(names, inputs))).last_hidden_state

    # Two rows, the second padded: the trace must carry the attention mask through.
    input_ids = torch.full((2, 12), 1000, dtype=torch.long)
    attention_mask = torch.ones((2, 12), dtype=torch.long)
    attention_mask[1, 7:] = 0
    example = [input_ids, attention_mask] + ([torch.zeros((2, 12), dtype=torch.long)] if takes_token_types else [])
    axes = {name: {0: "batch", 1: "sequence"} for name in [*names, "last_hidden_state"]}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TracerWarnings about shape checks that hold for any input
        torch.onnx.export(
            TokenEmbeddings(),
            tuple(example),
            str(target),
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=int(str(EXPORT_SETTINGS["opset"])),
            do_constant_folding=True,
            dynamo=False,
        )


def model_takes_token_types(transformer: Any) -> bool:
    import inspect

    return "token_type_ids" in inspect.signature(transformer.forward).parameters


def quantize_int8(source: Path, target: Path) -> None:
    """Dynamic int8 quantization of the weights (activations quantized per batch at run time)."""
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise OnnxExportError(f"int8 quantization needs onnxruntime and onnx ({exc})") from exc
    # It logs "consider pre-processing" on the root logger: measured here, quant_pre_process changes nothing.
    advice = _DropMessages("Please consider to run pre-processing")
    logging.getLogger().addFilter(advice)
    try:
        quantize_dynamic(
            source,
            target,
            weight_type=getattr(QuantType, str(QUANTIZE_SETTINGS["weight_type"])),
            per_channel=bool(QUANTIZE_SETTINGS["per_channel"]),
            reduce_range=bool(QUANTIZE_SETTINGS["reduce_range"]),
            nodes_to_exclude=fp32_nodes(source),
        )
    finally:
        logging.getLogger().removeFilter(advice)


def fp32_nodes(source: Path) -> list[str]:
    """The graph's nodes that stay fp32: the feed-forward output projections of the first half of the layers."""
    import onnx

    graph = onnx.load(str(source), load_external_data=False).graph
    layers = {node.name: int(match.group(1)) for node in graph.node if (match := _FFN_OUTPUT.search(node.name))}
    if not layers:
        raise OnnxExportError(f"no feed-forward output projection found in {source.name}: not a graph this code exported")
    half = (max(layers.values()) + 1) // 2
    return sorted(name for name, layer in layers.items() if layer < half)


class _DropMessages(logging.Filter):
    def __init__(self, start: str):
        super().__init__()
        self.start = start

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.start)
