"""The Embedder: length-sorted batching must not change which row belongs to which text, and bf16
document embeddings must stay close to fp32 ones."""
from __future__ import annotations

import importlib.util
import math
import random
from pathlib import Path

import numpy as np
import pytest

from navigator.core.config import DEFAULT_EMBED_MODEL
from navigator.index.embedder import DOCUMENT_BATCH, Embedder
from navigator.core.errors import ModelError

SAME_TEXT_COSINE = 0.9999     # one text embedded alone vs inside a padded batch, fp32
BF16_MIN_COSINE = 0.999       # the same text at bf16 vs fp32
# Different texts must differ by more than batching noise (~1e-7) for a nearest-neighbour check to mean anything.
DISTINCT_TEXT_GAP = 1e-5
REAL_SNIPPETS = 12  # real code; few, because bf16 is emulated (slow) on CPUs without AMX or AVX512-BF16
# Enough texts for several batches, so rows cross batch boundaries when sorted by length.
TEXT_COUNT = 2 * DOCUMENT_BATCH + 7
WORDS = ("def", "return", "config", "parse", "index", "chunk", "vector", "query", "path", "error", "retry", "cache")


def varied_texts(count: int, seed: int = 7) -> list[str]:
    """Texts of distinct lengths (1..count words) in shuffled order, so sorting by length permutes them."""
    rng = random.Random(seed)
    lengths = list(range(1, count + 1))
    rng.shuffle(lengths)
    return [" ".join(rng.choice(WORDS) for _ in range(n)) + f" item{i}" for i, n in enumerate(lengths)]


def row_cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


@pytest.fixture(scope="module")
def tiny_fp32(tiny_embed_model) -> Embedder:
    return Embedder(tiny_embed_model, "fp32")


def test_length_sorted_batches_return_rows_in_input_order(tiny_fp32):
    texts = varied_texts(TEXT_COUNT)
    batched = tiny_fp32.encode_documents(texts)
    alone = np.stack([tiny_fp32.encode_documents([t])[0] for t in texts])
    assert batched.shape == (len(texts), alone.shape[1]) and batched.dtype == np.float32
    cosines = row_cosines(batched, alone)
    assert cosines.min() >= SAME_TEXT_COSINE, f"row {int(np.argmin(cosines))} is not its text's embedding"
    # Texts of neighbouring lengths can embed almost alike in a random tiny model, so also require each
    # row's nearest text-embedded-alone to be its own text: a swapped row cannot pass that.
    assert (alone @ alone.T - 2 * np.eye(len(texts))).max() < 1 - DISTINCT_TEXT_GAP
    nearest = np.argmax(batched @ alone.T, axis=1)
    assert nearest.tolist() == list(range(len(texts)))
    np.testing.assert_allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)


def test_on_batch_reports_every_text_once_per_batch(tiny_fp32):
    texts = varied_texts(TEXT_COUNT, seed=11)
    reported: list[int] = []
    tiny_fp32.encode_documents(texts, on_batch=reported.append)
    assert sum(reported) == len(texts)
    assert len(reported) == math.ceil(len(texts) / DOCUMENT_BATCH)
    assert max(reported) <= DOCUMENT_BATCH


def test_query_embedding_equals_document_embedding_of_same_text(tiny_fp32):
    text = "where is the retry policy configured"
    assert float(tiny_fp32.encode_query(text) @ tiny_fp32.encode_documents([text])[0]) >= SAME_TEXT_COSINE


def test_bf16_tiny_model_close_to_fp32(tiny_embed_model, tiny_fp32):
    texts = varied_texts(TEXT_COUNT, seed=3)
    cosines = row_cosines(Embedder(tiny_embed_model, "bf16").encode_documents(texts), tiny_fp32.encode_documents(texts))
    assert cosines.min() >= BF16_MIN_COSINE


@pytest.mark.slow
def test_bf16_real_model_close_to_fp32_on_real_code():
    # bf16 error depends on the real weights and activations, which a random tiny model does not have.
    from chunkers import chunk_file
    path = Path(importlib.util.find_spec("shutil").origin)
    snippets = [c.embed_text for c in chunk_file(path.name, path.read_text()).chunks][:REAL_SNIPPETS]
    bf16 = Embedder(DEFAULT_EMBED_MODEL, "bf16").encode_documents(snippets)
    fp32 = Embedder(DEFAULT_EMBED_MODEL, "fp32").encode_documents(snippets)
    cosines = row_cosines(bf16, fp32)
    assert cosines.min() >= BF16_MIN_COSINE, f"worst snippet {int(np.argmin(cosines))}: cosine {cosines.min():.5f}"


def test_unknown_dtype_is_a_model_error():
    with pytest.raises(ModelError) as err:
        Embedder(DEFAULT_EMBED_MODEL, "int8")
    assert "bf16" in err.value.hint


@pytest.mark.parametrize("native, expected", [(True, "bf16"), (False, "fp32")])
def test_auto_dtype_is_bf16_only_where_the_cpu_has_it(monkeypatch, tiny_embed_model, native, expected):
    # Emulated bf16 (no AMX / AVX512-BF16) ran 5x slower than fp32 on an AVX2 EPYC: auto must not pick it there.
    import navigator.index.embedder as embedder_module
    monkeypatch.setattr(embedder_module, "native_bf16", lambda: native)
    assert embedder_module.resolve_dtype("auto") == expected
    assert embedder_module.resolve_dtype("fp32") == "fp32" and embedder_module.resolve_dtype("bf16") == "bf16"
    loaded = []
    real_load = embedder_module._load
    monkeypatch.setattr(embedder_module, "_load", lambda name, dtype: loaded.append(dtype) or real_load(name, dtype))
    vectors = Embedder(tiny_embed_model, "auto").encode_documents(["def f(): pass"])
    assert loaded == [expected] and vectors.shape[0] == 1

