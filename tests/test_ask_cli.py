"""`nav ask` end to end: the real CLI, a real index, the real anthropic SDK, a local fake Messages API."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.fake_anthropic import FakeAnthropic, api_error, reply, text, tool_use
from tests.repo_factory import make_repo


@pytest.fixture
def indexed_repo(tmp_path, nav_env):
    root = make_repo(tmp_path / "repo", modules=3)
    out = subprocess.run([sys.executable, "-m", "navigator", "index", str(root)], capture_output=True, text=True,
                         env=os.environ.copy(), timeout=300)
    assert out.returncode == 0, out.stderr
    return root


def ask(root, question, *, base_url=None, api_key="sk-ant-test-key", extra=()):
    env = {k: v for k, v in os.environ.items() if not k.upper().endswith("_PROXY")}
    env.pop("ANTHROPIC_API_KEY", None)
    env.pop("ANTHROPIC_AUTH_TOKEN", None)
    if api_key:
        env["ANTHROPIC_API_KEY"] = api_key
    if base_url:
        env["ANTHROPIC_BASE_URL"] = base_url
    env["NO_PROXY"] = "127.0.0.1,localhost"
    return subprocess.run([sys.executable, "-m", "navigator", "ask", question, "--repo", str(root), *extra],
                          capture_output=True, text=True, env=env, timeout=300)


def test_ask_answers_from_search_and_a_file_it_read(indexed_repo):
    script = [
        reply(tool_use("search_code", {"query": "how many retries does feature 1 allow"}), stop_reason="tool_use"),
        reply(tool_use("read_file", {"path": "pkg/mod1.py", "start_line": 1, "end_line": 8}), stop_reason="tool_use"),
        reply(text("Feature 1 retries once: MAX_RETRIES_1 = 1 in pkg/mod1.py."), stop_reason="end_turn"),
    ]
    with FakeAnthropic(script) as fake:
        out = ask(indexed_repo, "How many retries does feature 1 allow?", base_url=fake.base_url)
        bodies = fake.message_bodies
    assert out.returncode == 0, out.stderr
    assert "MAX_RETRIES_1 = 1 in pkg/mod1.py" in out.stdout
    assert "files used: pkg/mod1.py" in out.stdout and "steps: 3" in out.stdout
    assert len(bodies) == 3 and "feature 1 allow?" in str(bodies[0]["messages"][0])
    # the search tool result is nav's budgeted envelope over the real index
    search_result = [b for b in bodies[1]["messages"][-1]["content"] if b["type"] == "tool_result"][0]
    search_text = str(search_result["content"])
    assert "nav context:" in search_text and "pkg/mod" in search_text and "tokens:" in search_text
    # the read_file result is the file's real content
    read_result = [b for b in bodies[2]["messages"][-1]["content"] if b["type"] == "tool_result"][0]
    assert "MAX_RETRIES_1 = 1" in str(read_result["content"]) and not read_result.get("is_error")


def test_ask_without_api_key_prints_the_context_and_exits_7(indexed_repo):
    out = ask(indexed_repo, "where does the worker run jobs", api_key=None)
    assert out.returncode == 7
    assert "ANTHROPIC_API_KEY" in out.stderr
    assert out.stdout.startswith("nav context:") and "Worker" in out.stdout


def test_ask_reports_an_auth_failure_and_exits_6(indexed_repo):
    with FakeAnthropic([api_error(401, "authentication_error", "invalid x-api-key")]) as fake:
        out = ask(indexed_repo, "where does the worker run jobs", base_url=fake.base_url)
    assert out.returncode == 6
    assert out.stderr.startswith("Error:") and ("401" in out.stderr or "authentication" in out.stderr.lower())
    assert "ANTHROPIC_API_KEY" in out.stderr  # the hint says what to fix
