"""`nav models pull`: the only download nav makes, with consent; offline it fails clearly."""
from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from navigator.core.errors import ModelError
from navigator.index import models


def test_pull_offline_fails_with_a_clear_message(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelError, match="offline mode is on") as err:
        models.pull("cross-encoder/ms-marco-MiniLM-L-6-v2", yes=True)
    assert "NAV_RERANK_MODEL" in err.value.hint


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_pull_with_the_hub_unreachable_is_a_model_error():
    # A subprocess: the Hub client reads HF_ENDPOINT and HF_HUB_OFFLINE when it is imported.
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env.update(HF_ENDPOINT=f"http://127.0.0.1:{_closed_port()}", HF_HUB_ETAG_TIMEOUT="2", HF_HUB_DOWNLOAD_TIMEOUT="2",
               NO_PROXY="127.0.0.1,localhost")
    code = ("from navigator.index import models\n"
            "from navigator.core.errors import ModelError\n"
            "try:\n    models.pull('cross-encoder/ms-marco-MiniLM-L-6-v2', yes=True)\n"
            "except ModelError as e:\n    print('MODEL-ERROR', e.exit_code, e.message)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert "MODEL-ERROR 4" in out.stdout, out.stdout + out.stderr
    assert "could not reach the Hugging Face Hub" in out.stdout


def test_local_models_lists_the_bundled_embedder():
    names = [m["name"] for m in models.local_models()]
    from navigator.core.config import DEFAULT_EMBED_MODEL
    assert names[0] == DEFAULT_EMBED_MODEL


def test_pull_asks_before_downloading(monkeypatch, tmp_path):
    from navigator.core.errors import UsageError
    plan = models.PullPlan("org/model", [("model.safetensors", 90_000_000), ("config.json", 600)], tmp_path)
    monkeypatch.setattr(models, "plan_pull", lambda name: plan)
    asked = []
    with pytest.raises(UsageError, match="not confirmed"):
        models.pull("org/model", ask=lambda text: asked.append(text) or False)
    assert asked and "2 files, 90.0 MB" in asked[0] and str(tmp_path) in asked[0]
    monkeypatch.setattr("sys.stdin", open(os.devnull))
    with pytest.raises(UsageError, match="needs your consent") as err:
        models.pull("org/model")
    assert "--yes" in err.value.hint


def test_cli_models_pull_offline_exits_4_with_what_to_do():
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    out = subprocess.run([sys.executable, "-m", "navigator", "models", "pull", "org/some-cross-encoder", "--yes"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 4
    assert "offline mode is on" in out.stderr and "Traceback" not in out.stderr
