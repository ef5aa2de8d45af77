"""The torch-free query path: the ONNX export of the real bundled model must embed queries as the
sentence-transformers (torch) path does, rank a real code corpus identically, and load without torch."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from navigator.core.config import DEFAULT_EMBED_MODEL
from navigator.core.errors import ModelError
from navigator.index.onnx_query import (MODEL_FILE, SPEC_FILE, OnnxQueryEncoder, export_onnx, is_exported, onnx_dir_for,
                                  read_layout)

REPO_ROOT = Path(__file__).resolve().parent.parent
MIN_QUERY_COSINE = 0.9999
TOP_K = 10
SNIPPETS_PER_MODULE = 25
# Real code: standard-library modules of the running Python, chunked by nav's own chunker.
SNIPPET_MODULES = ("textwrap", "shutil", "json.decoder", "json.encoder", "csv", "gzip", "tempfile", "glob")
LONG_QUERY = ("Traceback (most recent call last):\n" + "".join(
    f'  File "/srv/app/handlers/module_{i}.py", line {10 * i + 3}, in handle_request_{i}\n'
    f"    response = dispatch(request, retries={i}, timeout=config.timeout)\n" for i in range(12))
    + "ValueError: could not decode the JSON body: Expecting ',' delimiter: line 1 column 18")
QUERIES = [
    "wrap a paragraph of text to a fixed width",
    "remove common leading whitespace from lines",
    "copy a file and preserve its permission bits",
    "recursively delete a directory tree and handle errors",
    "find an executable on the PATH",
    "decode a JSON document from a string",
    "escape non-ASCII characters when encoding JSON",
    "detect infinite recursion with circular references while serialising",
    "parse rows of a comma separated values file",
    "guess whether a CSV file has a header row",
    "write compressed data to a gzip file",
    "read the gzip member header and check the magic number",
    "create a named temporary file that is deleted on close",
    "choose a safe directory for temporary files",
    "expand shell wildcard patterns into matching file names",
    "Where is the archive format registry for make_archive?",
    "DictReader fieldnames",
    "how are floating point infinities and NaN handled",
    "disk usage of a path",
    LONG_QUERY,
]


def code_snippets() -> list[str]:
    from chunkers import chunk_file
    snippets: list[str] = []
    for module in SNIPPET_MODULES:
        path = Path(importlib.util.find_spec(module).origin)
        chunks = chunk_file(path.name, path.read_text()).chunks
        snippets.extend(c.embed_text for c in chunks[:SNIPPETS_PER_MODULE])
    return snippets


@pytest.fixture(scope="session")
def exported(tmp_path_factory) -> Path:
    index_dir = tmp_path_factory.mktemp("index")
    return export_onnx(DEFAULT_EMBED_MODEL, onnx_dir_for(index_dir, DEFAULT_EMBED_MODEL))


@pytest.fixture(scope="session")
def onnx_encoder(exported) -> OnnxQueryEncoder:
    return OnnxQueryEncoder(exported)


@pytest.fixture(scope="session")
def torch_embedder():
    from navigator.index.embedder import Embedder
    return Embedder(DEFAULT_EMBED_MODEL, "fp32")


@pytest.fixture(scope="session")
def query_vectors(onnx_encoder, torch_embedder) -> tuple[np.ndarray, np.ndarray]:
    via_onnx = np.stack([onnx_encoder.encode(q) for q in QUERIES])
    via_torch = np.stack([torch_embedder.encode_query(q) for q in QUERIES])
    return via_onnx, via_torch


def test_onnx_query_vectors_match_torch(query_vectors, onnx_encoder):
    via_onnx, via_torch = query_vectors
    assert via_onnx.dtype == np.float32 and via_onnx.shape == via_torch.shape == (len(QUERIES), onnx_encoder.dimension)
    np.testing.assert_allclose(np.linalg.norm(via_onnx, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(via_onnx * via_torch, axis=1)
    worst = int(np.argmin(cosines))
    assert cosines[worst] >= MIN_QUERY_COSINE, f"query {QUERIES[worst][:60]!r}: cosine {cosines[worst]:.6f}"


def test_long_query_is_truncated_at_max_seq_length(onnx_encoder, query_vectors):
    # The long query only agrees with torch (previous test) if both cut it at the same word piece.
    assert len(onnx_encoder.tokenizer.encode(LONG_QUERY).ids) == onnx_encoder.spec["max_seq_length"] == 256
    via_onnx, via_torch = query_vectors
    assert float(via_onnx[-1] @ via_torch[-1]) >= MIN_QUERY_COSINE


def test_onnx_and_torch_rank_a_code_corpus_identically(query_vectors):
    from navigator.index.embedder import Embedder
    snippets = code_snippets()
    assert len(snippets) >= 190
    # Both query vectors are ranked against the same corpus matrix, so its precision is not under test:
    # "auto" embeds it in whichever dtype is fast on this CPU (emulated bf16 is 5x slower than fp32).
    corpus = Embedder(DEFAULT_EMBED_MODEL, "auto").encode_documents(snippets)
    via_onnx, via_torch = query_vectors
    for query, q_onnx, q_torch in zip(QUERIES, via_onnx, via_torch):
        top_onnx = np.argsort(-(corpus @ q_onnx), kind="stable")[:TOP_K].tolist()
        top_torch = np.argsort(-(corpus @ q_torch), kind="stable")[:TOP_K].tolist()
        assert top_onnx == top_torch, f"rankings differ for {query[:60]!r}"


def test_query_path_imports_no_torch(exported):
    probe = (
        "import json, sys\n"
        "from navigator.index.onnx_query import OnnxQueryEncoder\n"
        f"vec = OnnxQueryEncoder({str(exported)!r}).encode('where is the config parsed')\n"
        "heavy = sorted(m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules)\n"
        "print(json.dumps({'heavy': heavy, 'dim': len(vec)}))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report == {"heavy": [], "dim": 384}


def test_export_is_reused_and_leaves_no_staging(exported):
    model_mtime = (exported / MODEL_FILE).stat().st_mtime_ns
    again = export_onnx(DEFAULT_EMBED_MODEL, exported)  # would take seconds and rewrite the file if not reused
    assert again == exported
    assert (exported / MODEL_FILE).stat().st_mtime_ns == model_mtime
    assert [p.name for p in exported.parent.iterdir()] == [exported.name]


def test_tiny_model_export_matches_torch_with_layout_from_tokenizer(tmp_path, tiny_embed_model):
    # A sentence-transformers 6 directory: no max_seq_length in sentence_bert_config.json, so the limit
    # comes from the tokenizer, capped by the position table, exactly as sentence-transformers decides it.
    from navigator.index.embedder import Embedder
    assert read_layout(Path(tiny_embed_model)).max_seq_length is None
    encoder = OnnxQueryEncoder(export_onnx(tiny_embed_model, onnx_dir_for(tmp_path, tiny_embed_model)))
    torch_side = Embedder(tiny_embed_model, "fp32")
    for text in ("short", " ".join(f"word{i}" for i in range(400)), QUERIES[0]):
        assert float(encoder.encode(text) @ torch_side.encode_query(text)) >= MIN_QUERY_COSINE


def test_onnx_dir_for_keys_by_model_identity(tmp_path):
    a = onnx_dir_for(tmp_path, DEFAULT_EMBED_MODEL)
    assert a == onnx_dir_for(tmp_path, DEFAULT_EMBED_MODEL)
    assert a.parent == tmp_path / "onnx"
    others = {onnx_dir_for(tmp_path, name) for name in ("/models/a/st", "/models/b/st", "org/st")}
    assert len(others) == 3 and a not in others


def test_incomplete_export_is_not_used(tmp_path, exported):
    partial = tmp_path / "partial"
    partial.mkdir()
    for name in (MODEL_FILE, "tokenizer.json"):
        (partial / name).write_bytes((exported / name).read_bytes())
    assert not is_exported(partial)  # no export.json: the writer died before finishing
    with pytest.raises(ModelError) as err:
        OnnxQueryEncoder(partial)
    assert "nav index" in err.value.hint
    (partial / SPEC_FILE).write_text(json.dumps({**json.loads((exported / SPEC_FILE).read_text()), "format": 0}))
    assert not is_exported(partial)  # an older export format is redone, not trusted


def test_unsupported_model_layout_is_refused(tmp_path):
    (tmp_path / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}]))
    with pytest.raises(ModelError, match="Dense"):
        read_layout(tmp_path)
    (tmp_path / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": 8, "pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}))
    with pytest.raises(ModelError, match="cls"):
        read_layout(tmp_path)
    with pytest.raises(ModelError):
        read_layout(tmp_path / "not-a-model")


def test_batched_document_vectors_match_torch_in_input_order(exported, torch_embedder):
    # The indexer embeds with this where bf16 is not native: rows must be in input order, independent of the
    # padding of their length-sorted batch, and equal to what sentence-transformers computes in fp32.
    snippets = code_snippets()[:70]
    snippets = snippets[::2] + snippets[1::2]   # not in length order, and two batches of 32 and a rest
    encoder = OnnxQueryEncoder(exported, threads=2)
    batches: list[int] = []
    via_onnx = encoder.encode_documents(snippets, on_batch=batches.append)
    via_torch = torch_embedder.encode_documents(snippets)
    assert batches == [32, 32, 6] and via_onnx.shape == via_torch.shape
    cosines = np.sum(via_onnx * via_torch, axis=1)
    assert cosines.min() >= MIN_QUERY_COSINE, f"snippet {int(np.argmin(cosines))}: cosine {cosines.min():.6f}"
    # a row does not depend on its batch: the same text alone (unpadded) gives the same vector
    alone = encoder.encode(snippets[5])
    assert float(alone @ via_onnx[5]) >= MIN_QUERY_COSINE
