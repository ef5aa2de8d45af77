"""nav's own embedder, shipped in the repository (issue 24, patches/0027): chosen by NAV_EMBEDDER, loaded only
after its checksums match, named in the index with its weights' hash, listed by `nav models list`."""
from __future__ import annotations

import json
import shutil

import pytest

from navigator.core.config import DEFAULT_EMBED_MODEL, Config
from navigator.core.errors import EmbedderMismatchError, ModelError, UsageError
from navigator.index import models
from navigator.index.embedder import Embedder, resolve_model_path

NAME = "nav-code-minilm"


def test_nav_embedder_names_the_shipped_models_and_refuses_others():
    assert Config.from_env({}).embed_model == DEFAULT_EMBED_MODEL
    assert Config.from_env({"NAV_EMBEDDER": "minilm"}).embed_model == DEFAULT_EMBED_MODEL
    assert Config.from_env({"NAV_EMBEDDER": "Nav-Code-MiniLM"}).embed_model == NAME
    # NAV_EMBED_MODEL (any local model) wins over the shipped names
    assert Config.from_env({"NAV_EMBEDDER": NAME, "NAV_EMBED_MODEL": "/models/x"}).embed_model == "/models/x"
    with pytest.raises(UsageError, match="NAV_EMBEDDER must be one of"):
        Config.from_env({"NAV_EMBEDDER": "e5-large"})


def test_the_shipped_model_matches_its_manifest_and_is_named_by_its_weights():
    manifest = models.shipped_manifest(NAME)
    assert manifest is not None and manifest["dtype"] == "float16"
    folder = models.verified_model_dir(NAME)
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    assert size <= 50_000_000                                        # the cap per model
    weights = manifest["files"]["model.safetensors"]
    assert Embedder(NAME).identity == f"{NAME}-{weights[:12]}"
    assert Embedder(DEFAULT_EMBED_MODEL).identity == DEFAULT_EMBED_MODEL   # old indexes keep their identity
    assert resolve_model_path(NAME) == str(folder)
    assert models.shipped_manifest("../../etc") is None and models.shipped_manifest("no-such-model") is None


def test_a_damaged_or_incomplete_shipped_model_is_refused(tmp_path, monkeypatch):
    copy = tmp_path / "models"
    shutil.copytree(models.SHIPPED_DIR / NAME, copy / NAME)
    monkeypatch.setattr(models, "SHIPPED_DIR", copy)
    monkeypatch.setattr(models, "_VERIFIED", {})
    tokenizer = copy / NAME / "tokenizer.json"
    text = tokenizer.read_bytes()
    tokenizer.write_bytes(text[:-2] + b" }")
    with pytest.raises(ModelError, match="damaged: tokenizer.json") as err:
        models.verified_model_dir(NAME)
    assert "git checkout" in err.value.hint
    tokenizer.unlink()
    with pytest.raises(ModelError, match="incomplete: tokenizer.json is missing"):
        models.verified_model_dir(NAME)


def test_models_list_shows_both_embedders():
    from tests.test_cli import nav
    listed = nav("models", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    found = {m["name"]: m for m in json.loads(listed.stdout)}
    assert found[DEFAULT_EMBED_MODEL]["embedder"] == "minilm"
    assert found[NAME]["embedder"] == NAME and found[NAME]["identity"] == Embedder(NAME).identity
    assert 20_000_000 < found[NAME]["bytes"] <= 50_000_000


@pytest.mark.slow
def test_an_index_embedded_by_the_shipped_model_searches_and_switches_only_when_indexed(tmp_path, nav_env, monkeypatch):
    from navigator.index.indexer import build_index
    from navigator.index.nav_index import NavIndex
    from tests.repo_factory import make_repo
    root = make_repo(tmp_path / "repo", modules=2)
    monkeypatch.delenv("NAV_EMBED_MODEL")          # nav_env's tiny model would win over NAV_EMBEDDER
    monkeypatch.setenv("NAV_EMBEDDER", NAME)
    summary = build_index(root, Config.from_env())
    assert summary.chunks_embedded > 0
    index = NavIndex.open(root)
    assert index.manifest["embedder"] == Embedder(NAME).identity
    hits = index.vector_search("worker runs jobs", 3)
    assert hits and all(-1.0 <= score <= 1.0001 for _, score in hits)
    # fp16 weights widened to fp32: a text's vector is unit length and its own nearest neighbour
    vec = Embedder(NAME, "fp32").encode_documents(["def run_jobs(worker): return worker.run()", "colour of the sky"])
    assert vec.dtype.name == "float32" and abs(float((vec[0] ** 2).sum()) - 1.0) < 1e-3
    monkeypatch.setenv("NAV_EMBEDDER", "minilm")
    with pytest.raises(EmbedderMismatchError, match=NAME):
        NavIndex.open(root)                            # searches name the switch; `nav index` makes it
    switched = build_index(root, Config.from_env())
    assert switched.chunks_embedded == summary.chunks_embedded
    assert NavIndex.open(root).manifest["embedder"] == Embedder(DEFAULT_EMBED_MODEL).identity
