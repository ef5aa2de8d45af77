"""nav's own cross-encoder: the ONNX export against torch, the rerank loading paths, and the training data
miner's refusal to touch eval corpora (training/train_cross_encoder.py)."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from navigator.core.errors import ModelError
from retrievers.cross_encoder_onnx import OnnxCrossEncoder, export_cross_encoder, is_cross_encoder_export
from retrievers.rerank import BUNDLED_MODEL, _MODEL_CACHE, bundled_model_dir, load_cross_encoder

from conftest import TINY_CROSS_ENCODER_LENGTH

REPO = Path(__file__).resolve().parent.parent

PAIRS = [
    ("where is the retry policy", "def retry(fn, n):\n    for _ in range(n):\n        fn()"),
    ("parse args", "def parse_args(argv):\n    return parser.parse_args(argv)"),
    ("read a file", "def read_file(path):\n    return open(path).read()"),
    # longer than the model's window on both sides: longest-first truncation must match the torch tokenizer
    ("how does the config file get written to disk " * 4, "def write_file(path, data):\n    open(path, 'w').write(data)\n" * 8),
]


def _load_training_script():
    """training/ is a script folder, not a package: load the file as a module (once)."""
    if "train_cross_encoder" not in sys.modules:
        spec = importlib.util.spec_from_file_location("train_cross_encoder", REPO / "training" / "train_cross_encoder.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module   # dataclasses look their module up while the class is defined
        spec.loader.exec_module(module)
    return sys.modules["train_cross_encoder"]


@pytest.fixture(scope="module")
def tiny_export(tiny_cross_encoder_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny-onnx")
    report = export_cross_encoder(tiny_cross_encoder_dir, out, max_length=TINY_CROSS_ENCODER_LENGTH, quantize=False)
    return out, report


def test_onnx_export_scores_like_the_torch_cross_encoder(tiny_cross_encoder_dir, tiny_export):
    from sentence_transformers import CrossEncoder

    out, report = tiny_export
    assert is_cross_encoder_export(out) and report["probe_max_logit_diff_fp32"] < 1e-3
    torch_scores = CrossEncoder(str(tiny_cross_encoder_dir), local_files_only=True).predict(PAIRS, show_progress_bar=False)
    onnx_scores = OnnxCrossEncoder(out).predict(PAIRS, batch_size=3)   # two batches, different padding
    assert np.allclose(onnx_scores, torch_scores, atol=1e-5)
    assert len(set(np.round(onnx_scores, 4))) == len(PAIRS)   # the pairs really score differently


def test_rerank_loads_an_onnx_export_without_importing_torch(tiny_export):
    out, _ = tiny_export
    code = ("import sys, json; from retrievers.rerank import load_cross_encoder; "
            f"s = load_cross_encoder({str(out)!r}).predict({PAIRS[:2]!r}); "
            "print(json.dumps([float(x) for x in s])); assert 'torch' not in sys.modules, 'torch imported'")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr
    assert np.allclose(json.loads(done.stdout), OnnxCrossEncoder(out).predict(PAIRS[:2]), atol=1e-6)


def test_an_incomplete_export_directory_is_not_taken_for_one(tiny_export, tmp_path):
    out, _ = tiny_export
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "model.onnx").write_bytes((out / "model.onnx").read_bytes())
    assert not is_cross_encoder_export(partial)
    with pytest.raises(ModelError):
        OnnxCrossEncoder(partial)


def test_the_bundled_cross_encoder_loads_from_package_data_and_ranks_code():
    if not is_cross_encoder_export(bundled_model_dir()):
        pytest.skip("this checkout ships no bundled cross-encoder")
    _MODEL_CACHE.pop(BUNDLED_MODEL, None)
    model = load_cross_encoder(BUNDLED_MODEL)
    assert isinstance(model, OnnxCrossEncoder)
    query = "read the whole contents of a file"
    passages = ["util/io.py · read_text\ndef read_text(path):\n    with open(path) as fh:\n        return fh.read()",
                "net/retry.py · backoff\ndef backoff(attempt):\n    return min(60, 2 ** attempt)",
                "cli/colors.py · style\ndef style(text, fg):\n    return f'\\x1b[{fg}m{text}\\x1b[0m'"]
    scores = model.predict([(query, p) for p in passages])
    assert scores.shape == (3,) and np.all(np.isfinite(scores))
    assert int(np.argmax(scores)) == 0


def test_the_bundled_name_without_a_shipped_model_is_a_clear_model_error(tmp_path, monkeypatch):
    import retrievers.rerank as rerank

    monkeypatch.setattr(rerank, "bundled_model_dir", lambda: tmp_path / "cross_encoder")
    monkeypatch.delitem(_MODEL_CACHE, BUNDLED_MODEL, raising=False)
    with pytest.raises(ModelError, match="bundled cross-encoder is missing") as info:
        load_cross_encoder(BUNDLED_MODEL)
    assert "NAV_RERANK_MODEL" in info.value.hint


def test_the_bundled_name_loads_an_export_placed_in_package_data(tiny_export, monkeypatch):
    import retrievers.rerank as rerank

    out, _ = tiny_export
    monkeypatch.setattr(rerank, "bundled_model_dir", lambda: out)
    monkeypatch.delitem(_MODEL_CACHE, BUNDLED_MODEL, raising=False)
    try:
        model = load_cross_encoder(BUNDLED_MODEL)
        assert isinstance(model, OnnxCrossEncoder)
        assert np.allclose(model.predict(PAIRS), OnnxCrossEncoder(out).predict(PAIRS))
    finally:
        _MODEL_CACHE.pop(BUNDLED_MODEL, None)


# ---------------------------------------------------------------------------------------- training data

def test_mining_refuses_an_eval_corpus_by_name_or_path(tmp_path):
    train = _load_training_script()
    forbidden = train.forbidden_names(tmp_path)   # no devsets there: the built-in list
    for name in ("click", "Werkzeug", "django", "twisted"):
        with pytest.raises(train.ForbiddenSourceError):
            train.check_source_allowed(name, [], forbidden)
    with pytest.raises(train.ForbiddenSourceError):   # a vendored copy inside an allowed distribution
        train.check_source_allowed("somepkg", ["somepkg/_vendor/click/core.py"], forbidden)
    train.check_source_allowed("typer", ["typer/_click_compat.py", "typer/main.py"], forbidden)   # allowed


def test_mining_refuses_an_explicit_forbidden_source_before_reading_anything(tmp_path, monkeypatch):
    train = _load_training_script()
    source = tmp_path / "werkzeug"
    source.mkdir()
    (source / "routing.py").write_text('def match(path):\n    """Match a URL path to a rule."""\n    return path\n')
    monkeypatch.setattr(train, "discover_sources", lambda forbidden: pytest.fail("mined before checking"))
    with pytest.raises(train.ForbiddenSourceError, match="werkzeug"):
        train.mine(tmp_path / "out", [], 10, 1, [source])
    assert not (tmp_path / "out").exists()


def test_repositories_named_by_the_shared_devsets_are_forbidden(tmp_path):
    train = _load_training_script()
    devset = tmp_path / "devsets" / "swe-flask"
    devset.mkdir(parents=True)
    (devset / "flask-2.0.jsonl").write_text('{"id": "x", "repo": "pallets/itsdangerous", "query": "q"}\n')
    forbidden = train.forbidden_names(tmp_path)
    assert {"flask", "itsdangerous", "pallets", "click"} <= forbidden
    with pytest.raises(train.ForbiddenSourceError):
        train.check_source_allowed("itsdangerous", [], forbidden)


def test_licenses_outside_mit_bsd_apache_psf_are_not_mined():
    train = _load_training_script()
    assert train.license_is_permissive("MIT", [])
    assert train.license_is_permissive("", ["License :: OSI Approved :: BSD License"])
    assert train.license_is_permissive("Apache-2.0 OR BSD-2-Clause", [])
    assert not train.license_is_permissive("MPL-2.0 AND MIT", [])
    assert not train.license_is_permissive("GPL-3.0-or-later", [])
    assert not train.license_is_permissive("", [])   # unknown: left out


def test_a_documented_function_becomes_a_question_and_its_code_without_the_docstring(tmp_path):
    import random

    train = _load_training_script()
    path = tmp_path / "mod.py"
    path.write_text('class Store:\n    def load_rows(self, path):\n        """Read every row of a CSV file into memory."""\n'
                    '        # keep the header row apart from the data rows\n'
                    '        with open(path) as fh:\n            return list(fh)\n')
    items = train.mine_file(path, "pkg/mod.py", "pkg", random.Random(0))
    doc = [it for it in items if it["kind"] == "docstring"]
    assert len(doc) == 1 and doc[0]["query"] == "Read every row of a CSV file into memory"
    assert doc[0]["name"] == "Store.load_rows"
    assert doc[0]["passage"].startswith("pkg/mod.py · Store.load_rows\nclass Store:\n")
    assert "Read every row" not in doc[0]["passage"] and "with open(path)" in doc[0]["passage"]
    comment = [it for it in items if it["kind"] == "comment"]
    assert comment and "keep the header row" not in comment[0]["passage"]
