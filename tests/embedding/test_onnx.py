"""The ONNX Runtime path gives sentence-transformers' vectors; int8 gives close ones under its own id.

The model tests load the real all-MiniLM-L6-v2 and export it once per session into a
temporary cache (about 5 s for fp32, 5 s more for int8).
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rag.config import REPO_ROOT, Settings
from rag.embedding.local import LocalEmbedder
from rag.embedding.local_models import local_model
from rag.embedding.onnx_encoder import mean_pooled_unit_vectors
from rag.embedding.onnx_files import _cached, file_prefix, onnx_file

MINILM = local_model("all-MiniLM-L6-v2")


def transcript_texts() -> list[str]:
    """Real meeting text: every turn of the example transcripts, plus turns joined into chunk-sized texts."""
    turns = [
        line.split(":", 1)[1].strip()
        for path in sorted((REPO_ROOT / "examples" / "transcripts").glob("*.txt"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if ":" in line
    ]
    joined = [" ".join(turns[i : i + 12]) for i in range(0, len(turns), 12)]
    return turns[:40] + joined + ["ok", "Budget?"]


# --- without the model ---------------------------------------------------------------


def test_int8_rows_record_their_own_model_id_and_fp32_onnx_keeps_torch_s():
    assert Settings(embedding_runtime="torch").embedding.model_id == "local/all-MiniLM-L6-v2"
    assert Settings(embedding_runtime="onnx").embedding.model_id == "local/all-MiniLM-L6-v2"
    assert Settings(embedding_runtime="onnx-int8").embedding.model_id == "local/all-MiniLM-L6-v2-int8"
    assert Settings(embedding_runtime="onnx-int8", embedding_model="all-mpnet-base-v2").embedding.model_id == (
        "local/all-mpnet-base-v2-int8"
    )
    # Only the local provider has runtimes.
    assert Settings(embedding_provider="openai", embedding_runtime="onnx-int8").embedding.model_id == (
        "openai/text-embedding-3-small"
    )
    embedder = LocalEmbedder(Settings(embedding_runtime="onnx-int8"))
    assert embedder.model_id == "local/all-MiniLM-L6-v2-int8" and embedder.dimension == 384


def test_cached_file_names_change_with_the_weights_and_the_variant():
    fp32, int8 = file_prefix(MINILM, "fp32"), file_prefix(MINILM, "int8")
    assert fp32.startswith(f"all-MiniLM-L6-v2-{MINILM.sha256['model.safetensors'][:12]}-fp32-")
    assert int8 != fp32 and "-int8-" in int8


def test_a_damaged_cached_file_is_removed_and_a_whole_one_is_used(tmp_path: Path):
    prefix = "m-0123456789ab-fp32-0000000000"
    whole = b"the whole file"
    truncated = tmp_path / f"{prefix}.{hashlib.sha256(b'the whole file and more').hexdigest()}.onnx"
    truncated.write_bytes(b"the whole file and m")  # cut short: does not match its name
    assert _cached(tmp_path, prefix) is None
    assert not truncated.exists()

    good = tmp_path / f"{prefix}.{hashlib.sha256(whole).hexdigest()}.onnx"
    good.write_bytes(whole)
    (tmp_path / f".{prefix}.x.partial").write_bytes(b"half")  # a crashed writer's scratch file is never read
    found = _cached(tmp_path, prefix)
    assert found is not None and found.path == good and found.content == whole


def test_mean_pooling_leaves_out_padding_and_normalizes():
    tokens = np.array([[[1.0, 0.0], [3.0, 0.0], [100.0, 100.0]]], dtype=np.float32)
    mask = np.array([[1, 1, 0]])
    assert mean_pooled_unit_vectors(tokens, mask).tolist() == [[1.0, 0.0]]


# --- the real model --------------------------------------------------------------------


@pytest.fixture(scope="session")
def onnx_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="session")
def embedders(onnx_cache: Path) -> dict[str, LocalEmbedder]:
    built = {
        runtime: LocalEmbedder(Settings(embedding_runtime=runtime, model_cache_dir=onnx_cache))
        for runtime in ("torch", "onnx", "onnx-int8")
    }
    for embedder in built.values():
        embedder.embed(["warm up"])
    return built


@pytest.mark.slow
def test_onnx_vectors_equal_sentence_transformers_vectors(embedders):
    texts = transcript_texts()
    torch_vectors = np.array(embedders["torch"].embed(texts))
    onnx_vectors = np.array(embedders["onnx"].embed(texts))
    assert onnx_vectors.shape == torch_vectors.shape == (len(texts), 384)
    assert np.abs(onnx_vectors - torch_vectors).max() < 1e-5  # measured: about 2e-7
    assert (onnx_vectors * torch_vectors).sum(axis=1).min() > 0.9999
    assert embedders["onnx"].model_id == embedders["torch"].model_id == "local/all-MiniLM-L6-v2"


@pytest.mark.slow
def test_onnx_truncates_at_the_model_s_256_word_pieces_as_sentence_transformers_does(embedders):
    onnx = embedders["onnx"]
    words = " ".join(["battery", "enclosure", "schedule", "Friday"] * 150)  # 600 word pieces
    first_254 = onnx._tokenizer.decode(onnx._tokenizer.encode(words, add_special_tokens=False).ids[:254])
    long_onnx, cut_onnx = np.array(onnx.embed([words, first_254]))
    long_torch = np.array(embedders["torch"].embed([words])[0])
    assert np.abs(long_onnx - long_torch).max() < 1e-5
    assert np.abs(long_onnx - cut_onnx).max() < 1e-5  # nothing past the limit is read
    # Batching pads to the longest text: a short text beside a long one gets its own vector.
    alone = np.array(onnx.embed(["Budget?"])[0])
    beside = np.array(onnx.embed([words, "Budget?"])[1])
    assert np.abs(alone - beside).max() < 1e-5


@pytest.mark.slow
def test_int8_vectors_are_close_but_recorded_under_their_own_id(embedders):
    texts = transcript_texts()
    fp32 = np.array(embedders["onnx"].embed(texts))
    int8 = np.array(embedders["onnx-int8"].embed(texts))
    cosine = (fp32 * int8).sum(axis=1)
    assert cosine.mean() > 0.99 and cosine.min() > 0.97  # measured: mean .9945, min .981 (eval chunks: .996, .991)
    assert np.abs(fp32 - int8).max() > 1e-3  # other vectors: they must never share an index with fp32 ones
    assert np.allclose(np.linalg.norm(int8, axis=1), 1.0, atol=1e-5)
    assert embedders["onnx-int8"].model_id == "local/all-MiniLM-L6-v2-int8"
    # Dynamic quantization scales activations by the whole batch's range, so int8 runs one text at a time:
    # a text's vector is the same alone or among others (batched, the cosine fell to .983-.987).
    alone = np.array(embedders["onnx-int8"].embed([texts[0]])[0])
    assert np.abs(alone - int8[0]).max() < 1e-6


@pytest.mark.slow
def test_int8_keeps_the_first_half_of_the_feed_forward_output_projections_in_fp32(embedders, onnx_cache: Path):
    import onnx

    (int8_file,) = (onnx_cache / "onnx").glob("*-int8-*.onnx")
    graph = onnx.load(str(int8_file)).graph
    projections = {node.name: node.op_type for node in graph.node if "output/dense" in node.name}
    fp32 = sorted(name for name, op in projections.items() if op == "MatMul" and "attention" not in name)
    assert fp32 == [f"/transformer/encoder/layer.{i}/output/dense/MatMul" for i in (0, 1, 2)]
    quantized = [name for name, op in projections.items() if op != "MatMul"]
    assert len(quantized) >= 9  # every attention output projection and the upper half's feed-forward ones


EXPORT = """
import sys
from pathlib import Path
from rag.embedding.local_models import local_model
from rag.embedding.model_files import model_directory
from rag.embedding.onnx_files import onnx_file
model = local_model("all-MiniLM-L6-v2")
cache = Path(sys.argv[1])
print(onnx_file(model, model_directory(model, cache), cache, "fp32").path.name)
"""


@pytest.mark.slow
def test_two_processes_exporting_at_once_end_with_one_valid_file(tmp_path: Path):
    racers = [
        subprocess.Popen([sys.executable, "-c", EXPORT, str(tmp_path)], stdout=subprocess.PIPE, text=True) for _ in range(2)
    ]
    names = [racer.communicate(timeout=300)[0].strip() for racer in racers]
    assert all(racer.returncode == 0 for racer in racers)
    files = sorted((tmp_path / "onnx").glob("*.onnx"))
    assert [f.name for f in files] == [names[0]] == [names[1]]
    assert not list((tmp_path / "onnx").glob("*.partial"))
    digest = files[0].name.rsplit(".", 2)[1]
    assert hashlib.sha256(files[0].read_bytes()).hexdigest() == digest


@pytest.mark.slow
def test_a_truncated_cached_file_is_rebuilt_before_it_is_loaded(embedders, onnx_cache: Path, tmp_path: Path):
    model_dir = Path(embedders["onnx"]._model_path)
    exported = onnx_file(MINILM, model_dir, onnx_cache, "fp32")
    cache = tmp_path / "cache"
    (cache / "onnx").mkdir(parents=True)
    damaged = cache / "onnx" / exported.path.name
    damaged.write_bytes(exported.content[: len(exported.content) // 2])  # what a full disk or a killed copy leaves

    embedder = LocalEmbedder(Settings(embedding_runtime="onnx", model_cache_dir=cache))
    vector = np.array(embedder.embed(["We decided to use a rechargeable battery."])[0])

    rebuilt = onnx_file(MINILM, model_dir, cache, "fp32")
    assert hashlib.sha256(rebuilt.content).hexdigest() == rebuilt.path.name.rsplit(".", 2)[1]
    assert len(rebuilt.content) > len(exported.content) // 2
    expected = np.array(embedders["torch"].embed(["We decided to use a rechargeable battery."])[0])
    assert np.abs(vector - expected).max() < 1e-5


@pytest.mark.slow
def test_int8_rows_get_their_own_partial_index_and_are_searched_apart_from_fp32_rows(db, embedders):
    from rag.search.engine import SearchScope, search_chunks
    from rag.store import documents as repo
    from rag.store.migrations import embedding_index_name, migrate
    from tests.store.test_documents import source, transcript

    int8 = embedders["onnx-int8"]
    settings = Settings(embedding_runtime="onnx-int8")
    assert settings.embedding.model_id == int8.model_id
    migrate(db, REPO_ROOT / "sql", {settings.embedding.model_id: settings.embedding.resolved_dimension})
    indexes = dict(db.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'chunks'").fetchall())
    definition = indexes[embedding_index_name("chunks", int8.model_id, 384)]
    assert "WHERE (embedding_model = 'local/all-MiniLM-L6-v2-int8'::text)" in definition
    assert embedding_index_name("chunks", int8.model_id, 384) != embedding_index_name("chunks", "local/all-MiniLM-L6-v2", 384)

    parsed, chunks = transcript(12)
    repo.replace_document(
        db, source(), repo.DocumentFields(), parsed, chunks, int8.embed([c.text for c in chunks]), int8.model_id
    )
    query = int8.embed([chunks[1].text])[0]
    scope = SearchScope("t1", ("p1",))
    hits = search_chunks(
        db, scope, mode="semantic", query="q", query_vector=query, model_id=int8.model_id, dimension=384, top_k=3
    )
    assert hits and hits[0].content == chunks[1].text and hits[0].similarity == pytest.approx(1.0, abs=1e-5)
    fp32 = embedders["onnx"].model_id
    assert search_chunks(db, scope, mode="semantic", query="q", query_vector=query, model_id=fp32, dimension=384, top_k=3) == []


@pytest.mark.slow
def test_once_exported_the_onnx_path_runs_without_torch(embedders, onnx_cache: Path):
    code = (
        "import sys\nfrom pathlib import Path\nfrom rag.config import Settings\nfrom rag.embedding.local import LocalEmbedder\n"
        f"e = LocalEmbedder(Settings(embedding_runtime='onnx', model_cache_dir=Path({str(onnx_cache)!r})))\n"
        "assert len(e.embed(['hello'])[0]) == 384\n"
        "print(sorted(m for m in ('torch', 'transformers', 'sentence_transformers', 'onnx') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
