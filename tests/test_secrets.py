"""Secrets stay out of the index and out of what nav serves (issue 25, part 1): secret-shaped files are skipped
and refused, secret values inside other files are redacted before anything is stored, embedded or served, and
--allow-secrets turns both off with a warning. The fake keys below have the real formats."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_loop.repo_files import RepoAccessError, read_file
from agent_loop.tools import RepoTools
from navigator.core.config import Config
from navigator.index.indexer import build_index
from navigator.index.secrets import REDACTION_MARKER, is_secret_file, redact
from tests.repo_factory import write

PROJECT_ROOT = Path(__file__).resolve().parent.parent
ANTHROPIC = "sk-ant-api03-Zx9Qm4T7vB2nK8pL5wR1yH6jD3fG0sA-cE4uI7oP2qW9eR5tY1uI3oP6aS8dF0gH2jK4lZ7xC9vB1n-AbCdEfGh"
OPENAI = "sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv4Wx7Yz0Ab3Cd6Ef9Gh2Ij5Kl8Mn1Op4Qr7St0Uv3Wx6Yz9"
AWS_ID = "AKIAQ3EGVTKWZR7XQLMP"
AWS_SECRET = "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"
GITHUB = "ghp_R7mQ2xT9vL4nB8wK1pZ6sY3cF0hD5gA2eU4j"
SLACK = "xoxb-2635942065-2343594206564-FGqddMF8t08v8N7Oq4i57vs1"
HIGH_ENTROPY = "8c4f9e1a2b3d5f6a7c8e9d0b1a2c3e4f5a6b7c8d"
PEM_LINE = "MIIEpAIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB"
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_LINE}\naG9ZoWkc8tjBNR5nmDkZs3Bc9vH0yT6HuuMWkjTKcQ3ZbhIzDpYx0fv9Q2mcbNtb\n-----END RSA PRIVATE KEY-----\n"
VALUES = (ANTHROPIC, OPENAI, AWS_ID, AWS_SECRET, GITHUB, SLACK, HIGH_ENTROPY, PEM_LINE)

CODE = f'''"""Settings of the service."""
import os

ANTHROPIC_API_KEY = "{ANTHROPIC}"
GITHUB_TOKEN = "{GITHUB}"
SIGNING_SECRET = "{HIGH_ENTROPY}"
TIMEOUT = os.environ.get("TIMEOUT", "30")


def client():
    return make_client(api_key=os.environ.get("OPENAI_API_KEY"))
'''
CONFIG = f"""[default]
aws_access_key_id = {AWS_ID}
aws_secret_access_key = {AWS_SECRET}
region = eu-west-1
"""
MARKDOWN = f"""# Deploying

Set the Slack token (`SLACK_BOT_TOKEN={SLACK}`) and the OpenAI key:

    export OPENAI_API_KEY={OPENAI}

The deploy key:

```
{PEM}```
"""


def make_secret_repo(root: Path) -> Path:
    write(root, ".env", f"ANTHROPIC_API_KEY={ANTHROPIC}\nDEBUG=1\n")
    write(root, ".env.example", "ANTHROPIC_API_KEY=\nDEBUG=1\n")
    write(root, "keys/id_ed25519", PEM)
    write(root, "keys/id_ed25519.pub", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE deploy@host\n")
    write(root, "credentials.ini", CONFIG)
    write(root, "service/settings.py", CODE)
    write(root, "service/credentials.py", "def load_credentials(path):\n    return open(path).read()\n")
    write(root, "deploy/aws.cfg", CONFIG)
    write(root, "docs/DEPLOY.md", MARKDOWN)
    write(root, "service/app.py", "def handler(event):\n    return {'ok': True}\n")
    return root


@pytest.mark.parametrize("path, secret", [
    (".env", True), ("app/.env.production", True), (".env.example", False), (".env.sample", False),
    ("keys/id_rsa", True), ("keys/id_ed25519", True), ("keys/id_ed25519.pub", False), ("tls/server.pem", True),
    ("tls/server.key", True), ("certs/store.p12", True), ("credentials.ini", True), ("credentials", True),
    ("lib/credentials.py", False), ("src/credentials.go", False), (".netrc", True), (".pypirc", True),
    (".npmrc", True), ("vault.kdbx", True), ("kubeconfig", True), ("src/env.py", False), ("README.md", False),
])
def test_secret_shaped_file_names(path, secret):
    assert is_secret_file(path) == secret


@pytest.mark.parametrize("path, text", [("service/settings.py", CODE), ("deploy/aws.cfg", CONFIG),
                                        ("docs/DEPLOY.md", MARKDOWN)])
def test_values_are_redacted_and_the_lines_stay_searchable_by_their_key(path, text):
    result = redact(path, text)
    assert result.count >= 2
    assert result.text.count("\n") == text.count("\n")          # every line keeps its number
    for value in VALUES:
        assert value not in result.text
    for key in ("ANTHROPIC_API_KEY", "GITHUB_TOKEN", "aws_secret_access_key", "SLACK_BOT_TOKEN", "OPENAI_API_KEY"):
        if key in text:
            line = next(line for line in result.text.splitlines() if key in line)
            assert REDACTION_MARKER in line or "os.environ" in line, line
    # what is not a secret stays: a reference to where the secret comes from, ordinary values
    assert 'os.environ.get("OPENAI_API_KEY")' in result.text or path != "service/settings.py"
    assert "region = eu-west-1" in result.text or path != "deploy/aws.cfg"


def test_a_file_without_secrets_is_returned_unchanged():
    text = (PROJECT_ROOT / "navigator" / "index" / "store.py").read_text(encoding="utf-8")
    assert redact("navigator/index/store.py", text).text == text


@pytest.fixture
def secret_index(tmp_path, nav_env):
    root = make_secret_repo(tmp_path / "repo")
    summary = build_index(root, Config.from_env())
    return root, summary


def _everything_stored(root: Path) -> bytes:
    """Every byte under the index folder: nav.db (and its WAL), the BM25 postings, the vector store."""
    index_dir = Config.from_env().index_dir_for(root)
    return b"".join(p.read_bytes() for p in sorted(index_dir.rglob("*")) if p.is_file())


def test_indexing_skips_secret_files_and_stores_no_secret_value(secret_index):
    root, summary = secret_index
    assert summary.skipped.get("secret") == 3                    # .env, keys/id_ed25519, credentials.ini
    assert summary.redacted["values"] >= 8 and summary.redacted["files"] == 3
    assert "values redacted in 3 files" in summary.render()
    stored = _everything_stored(root)
    assert REDACTION_MARKER.encode() in stored
    for value in VALUES:
        assert value.encode() not in stored, value
    for key in (b"ANTHROPIC_API_KEY", b"aws_secret_access_key", b"load_credentials"):
        assert key in stored                                     # still there, and searchable by name


def _nav(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "navigator", *args], capture_output=True, text=True, timeout=300,
                          env=env or os.environ.copy(), cwd=PROJECT_ROOT)


def test_search_context_and_status_serve_no_secret(secret_index):
    root, _ = secret_index
    outputs = [
        _nav("search", "ANTHROPIC_API_KEY secret value", "--repo", str(root), "--json", "-k", "10").stdout,
        _nav("search", "private key", "--repo", str(root), "--retriever", "bm25", "--json").stdout,
        _nav("search", "aws secret access key", "--repo", str(root), "--level", "file", "--json").stdout,
        _nav("context", "which api keys does the service use", "--repo", str(root), "--json", "--budget", "4000").stdout,
    ]
    hits = json.loads(outputs[0])["results"]
    assert hits and any("ANTHROPIC_API_KEY" in h["text"] for h in hits)
    assert not any(h["path"] in (".env", "keys/id_ed25519", "credentials.ini") for h in hits)
    for out in outputs:
        for value in VALUES:
            assert value not in out
    status = _nav("status", str(root)).stdout
    assert "3 secret-shaped files skipped" in status


def test_read_file_and_run_command_refuse_secret_files_and_redact_the_rest(secret_index):
    root, _ = secret_index
    for path in (".env", "keys/id_ed25519", "credentials.ini"):
        with pytest.raises(RepoAccessError, match="secret-shaped file"):
            read_file(root, path)
    excerpt = read_file(root, "docs/DEPLOY.md").render()
    assert "SLACK_BOT_TOKEN=" in excerpt and all(v not in excerpt for v in VALUES)
    middle = read_file(root, "docs/DEPLOY.md", start_line=12, end_line=13).render()   # inside the key block
    assert PEM_LINE not in middle and REDACTION_MARKER in middle
    tools = RepoTools(repo_root=root, search_code=lambda q, b: "", search_budget=100)
    refused = tools.call("run_command", {"command": "cat .env"})
    assert refused.is_error and "secret-shaped" in refused.content
    grep = tools.call("run_command", {"command": "grep -rn API_KEY ."})
    assert not grep.is_error and "service/settings.py" in grep.content
    assert all(v not in grep.content for v in VALUES)
    assert ".env:<redacted:secret> (a secret-shaped file: withheld)" in grep.content
    allowed = RepoTools(repo_root=root, search_code=lambda q, b: "", search_budget=100, allow_secrets=True)
    assert ANTHROPIC in allowed.call("read_file", {"path": ".env"}).content


def test_allow_secrets_indexes_them_with_a_warning_on_every_run(tmp_path, nav_env):
    root = make_secret_repo(tmp_path / "repo")
    out = _nav("index", str(root), "--allow-secrets")
    assert out.returncode == 0, out.stderr
    assert "warning: secrets are allowed" in out.stderr and "WARNING secrets are allowed" in out.stdout
    assert ANTHROPIC.encode() in _everything_stored(root)
    again = _nav("index", str(root), env={**os.environ, "NAV_ALLOW_SECRETS": "1"})
    assert "warning: secrets are allowed" in again.stderr
    # back to the default: the next run re-chunks every file under the redaction rule
    out = _nav("index", str(root))
    assert out.returncode == 0 and "warning" not in out.stderr
    stored = _everything_stored(root)
    assert b"sk-ant-api03" not in stored.split(b"embeddings")[0] or ANTHROPIC.encode() not in stored


def test_an_edit_asks_the_detectors_about_the_edited_lines_only(tmp_path, nav_env, monkeypatch):
    """Lines the last run's redaction passed are not read again (their verdict depends only on path and line);
    a secret kept in the file stays redacted, and a secret the edit adds is caught."""
    from navigator.index import secrets
    from navigator.index.nav_index import NavIndex
    root = tmp_path / "repo"
    body = ('NAMES = ["GEOSPreparedContainsProperly", "GEOSPreparedIntersects"]\n'
            f'GITHUB_TOKEN = "{GITHUB}"\n\n\ndef names():\n    return NAMES\n')
    write(root, "pkg/config.py", body)
    build_index(root, Config.from_env())
    asked: list[str] = []
    real = secrets.redact_line
    monkeypatch.setattr(secrets, "redact_line", lambda path, line: asked.append(line) or real(path, line))
    write(root, "pkg/config.py", body + f'\n\nSLACK = "{SLACK}"\nLABEL = "AnotherLongQuotedIdentifierHere"\n')
    summary = build_index(root, Config.from_env())
    assert sorted(asked) == sorted([f'GITHUB_TOKEN = "{GITHUB}"', f'SLACK = "{SLACK}"',
                                    'LABEL = "AnotherLongQuotedIdentifierHere"'])
    assert summary.redacted == {"values": 2, "files": 1}
    stored = "\n".join(c.text for c in NavIndex.open(root).chunks())
    assert GITHUB not in stored and SLACK not in stored and "GEOSPreparedContainsProperly" in stored
