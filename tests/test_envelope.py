"""Tests of the `nav context` envelope: what it states in each index state, and that its token figures hold."""
from __future__ import annotations

import json

import pytest

from chunkers.base import TOKEN_ESTIMATOR, CodeChunk, estimate_tokens
from navigator.context.envelope import (
    NOTHING_MATCHED, NOTHING_SEARCHED, OK, SCHEMA, SUFFICIENCY_SIGNALS, WEAK_EVIDENCE, build_envelope,
)
from navigator.context.selection import LEFT_OUT_REASONS, SelectionParams, params_for_retriever, select_context
from retrievers.base import HeadHit, RetrievedChunk

QUESTION = "what is the maximum number of agent loop steps"
LOOP = '''def run_agent_loop(client, task):
    """Run the agent until it answers or the loop reaches its step limit."""
    steps = 0
    while steps < MAX_STEPS:
        reply = client.send(task)
        if reply.done:
            return reply
        steps += 1
    raise LoopLimit("agent loop exceeded its step limit")'''
TOP_KEYS = {"schema", "statement", "question", "sufficiency", "tokens", "retriever", "index", "query",
            "weak_reasons", "pieces", "left_out"}


def index_state(state: str = "fresh", **changes) -> dict:
    base = {"state": state, "built_at": "2025-03-01T10:00:00Z", "age_seconds": 7300.0,
            "git_head": "0123456789abcdef0123", "files_changed_since": 0, "chunk_count": 40, "files_indexed": 6,
            "files_skipped": 1, "index_dir": "/srv/repo/.nav"}
    if state == "stale":
        base.update(files_changed_since=3, changed_examples=["agent/loop.py", "README.md"])
    if state == "empty":
        base.update(chunk_count=0, files_indexed=0)
    if state == "missing":
        base.update(built_at=None, age_seconds=None, git_head=None, files_changed_since=None, chunk_count=0,
                    files_indexed=0, files_skipped=0)
    base.update(changes)
    return base


def chunk(path: str, start: int, text: str, symbol: str, kind: str = "function") -> CodeChunk:
    return CodeChunk(path, start, start + text.count("\n"), kind, text, symbol=symbol)


def candidates(vector_scores=(0.62, 0.55, 0.5)) -> list[RetrievedChunk]:
    items = [
        chunk("agent/loop.py", 1, "MAX_STEPS = 12", "MAX_STEPS", kind="constant"),
        chunk("agent/loop.py", 3, LOOP, "run_agent_loop"),
        chunk("agent/copy_of_loop.py", 3, LOOP, "run_agent_loop"),
    ]
    return [RetrievedChunk(c, s, r, {"vector": HeadHit(r, s)})
            for r, (c, s) in enumerate(zip(items, vector_scores), start=1)]


def envelope(state: str = "fresh", budget: int = 400, cands=None, params=SelectionParams(), **index_changes):
    cands = candidates() if cands is None else cands
    selection = None if state in ("missing", "empty") else select_context(QUESTION, cands, budget, params)
    return build_envelope(QUESTION, selection, budget, "hybrid", index_state(state, **index_changes))


def test_fresh_index_ok_envelope_states_everything():
    env = envelope("fresh")
    data = env.to_json()
    assert set(data) == TOP_KEYS and data["schema"] == SCHEMA
    assert data["sufficiency"]["signal"] == OK
    assert data["tokens"]["allowed"] == 400 and data["tokens"]["estimator"] == TOKEN_ESTIMATOR
    assert "budget of 400 tokens" in data["statement"]
    assert data["retriever"]["name"] == "hybrid"
    assert data["index"]["git_head"] == "0123456789abcdef0123" and data["index"]["files_changed_since"] == 0
    assert data["index"]["changed_examples"] is None   # not provided: stated as null, the key stays
    assert json.loads(json.dumps(data)) == data
    assert [p["path"] for p in data["pieces"]] == ["agent/loop.py", "agent/loop.py"]
    first = data["pieces"][0]
    assert first["heads"] == {"vector": {"rank": 1, "score": 0.62}} and first["trimmed"] is False
    assert first["lines_kept"] == first["lines_total"] == 1
    assert set(data["left_out"]["by_reason"]) == set(LEFT_OUT_REASONS)
    assert data["left_out"]["by_reason"]["duplicate"] == 1 and data["left_out"]["cleared_bar"] == 1
    assert data["left_out"]["items"][0]["path"] == "agent/copy_of_loop.py"


def test_text_render_states_budget_estimator_index_and_left_out():
    env = envelope("fresh")
    text = env.render_text()
    assert f"{env.spent} spent of 400 allowed" in text
    assert "a selection" in text.lower() and "budget" in text
    assert TOKEN_ESTIMATOR in text
    assert "HEAD 0123456789ab" in text and "0 files changed since" in text and "2.0h old" in text
    assert "agent/copy_of_loop.py:3-11" in text and "duplicate" in text
    assert "=== agent/loop.py:1-1 MAX_STEPS | rank 1" in text
    assert "MAX_STEPS = 12" in text and LOOP in text
    assert text.index("left out:") < text.index("=== agent/loop.py")   # the header comes before the pieces


@pytest.mark.parametrize("budget", [5, 30, 60, 120, 400])
def test_token_totals_equal_returned_texts_and_never_exceed_budget(budget):
    data = envelope("fresh", budget=budget).to_json()
    assert data["tokens"]["spent"] == sum(estimate_tokens(p["text"]) for p in data["pieces"])
    assert data["tokens"]["spent"] == sum(p["tokens"] for p in data["pieces"])
    assert data["tokens"]["spent"] <= budget


def test_budget_losses_are_listed_with_paths_and_reason():
    env = envelope("fresh", budget=30)    # the constant fits, the loop function does not
    data = env.to_json()
    lost = [i for i in data["left_out"]["items"] if i["reason"] == "budget"]
    assert [i["path"] for i in lost] == ["agent/loop.py", "agent/copy_of_loop.py"]
    assert lost[0]["tokens"] > 30 - data["tokens"]["spent"]
    assert "agent/loop.py:3-11 run_agent_loop (rank 2" in env.render_text()
    assert not any("def run_agent_loop" in p["text"] for p in data["pieces"])   # never half a function


def test_stale_index_says_so_and_how_to_refresh():
    env = envelope("stale")
    data = env.to_json()
    assert data["index"]["state"] == "stale" and data["index"]["files_changed_since"] == 3
    assert data["sufficiency"]["signal"] == OK
    assert "stale" in env.explanation and "3 files changed" in env.explanation
    assert "nav index /srv/repo" in env.explanation
    assert "stale;" in env.render_text()
    assert "3 files (e.g. agent/loop.py, README.md) changed since" in env.render_text()
    assert data["index"]["changed_examples"] == ["agent/loop.py", "README.md"]


def test_missing_index_is_nothing_searched():
    env = envelope("missing")
    data = env.to_json()
    assert data["sufficiency"]["signal"] == NOTHING_SEARCHED
    assert "no index" in env.explanation and "`nav index /srv/repo`" in env.explanation
    assert data["pieces"] == [] and data["tokens"]["spent"] == 0
    assert data["index"]["state"] == "missing" and data["index"]["built_at"] is None
    assert "missing (looked in /srv/repo/.nav)" in env.render_text()


def test_empty_index_is_nothing_searched_and_names_the_cause():
    all_skipped = envelope("empty", files_skipped=9)
    assert all_skipped.sufficiency == NOTHING_SEARCHED
    assert "all 9 files were skipped" in all_skipped.explanation
    nothing_there = envelope("empty", files_skipped=0)
    assert nothing_there.sufficiency == NOTHING_SEARCHED and "no chunks" in nothing_there.explanation
    # A "fresh" state that holds no chunks is still nothing to search.
    assert envelope("fresh", chunk_count=0, cands=[]).sufficiency == NOTHING_SEARCHED


def test_nothing_matched_when_no_candidate_clears_the_bar():
    env = envelope("fresh", cands=candidates((0.0, 0.0, 0.0)), params=params_for_retriever("bm25"))
    data = env.to_json()
    assert data["sufficiency"]["signal"] == NOTHING_MATCHED
    assert "rephrase" in env.explanation
    assert data["pieces"] == [] and data["left_out"]["by_reason"]["below_bar"] == 3
    assert data["left_out"]["cleared_bar"] == 0
    assert envelope("fresh", cands=[]).sufficiency == NOTHING_MATCHED


def test_weak_evidence_is_flagged_with_reason_and_advice():
    env = envelope("fresh", cands=candidates((0.08, 0.07, 0.06)))
    data = env.to_json()
    assert data["sufficiency"]["signal"] == WEAK_EVIDENCE
    assert data["weak_reasons"] and "vector" in data["weak_reasons"][0]
    assert "confirm" in env.explanation
    assert data["pieces"], "weak evidence still returns what was found"


def test_nothing_fitting_the_budget_suggests_a_budget():
    big = chunk("agent/loop.py", 3, LOOP, "run_agent_loop")
    cands = [RetrievedChunk(big, 0.7, 1, {"vector": HeadHit(1, 0.7)})]
    env = envelope("fresh", budget=20, cands=cands)
    assert env.sufficiency == WEAK_EVIDENCE
    suggested = int(env.explanation.split("--budget ")[1].split()[0])
    assert suggested >= estimate_tokens(LOOP)
    # ... and that budget really admits it.
    assert envelope("fresh", budget=suggested, cands=cands).to_json()["pieces"][0]["path"] == "agent/loop.py"


def test_every_signal_is_one_of_the_four():
    states = [envelope(s) for s in ("fresh", "stale", "missing", "empty")]
    assert {e.sufficiency for e in states} <= set(SUFFICIENCY_SIGNALS)
    for e in states:
        assert e.explanation.endswith(".") and "\n" not in e.explanation
