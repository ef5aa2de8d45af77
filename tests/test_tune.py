"""`nav tune`: the policy contract, the sandbox, the supervisor's decisions, and a scripted worker on the real
SDK against a local fake Messages API, over a real index."""
from __future__ import annotations

import difflib
import math
import json
from pathlib import Path

import pytest

from navigator.context.policy import load_policy, shipped_policy_path, text_is_made_of
from navigator.core.config import Config
from navigator.core.errors import PolicyError
from navigator.index.indexer import build_index
from navigator.tuning.run import run_tune
from navigator.tuning.sandbox import SandboxLimits
from navigator.tuning.supervisor import PolicyScore, QueryScore, calibrate, judge, split_queries
from navigator.tuning.workers import ClaudeWorker, FolderWorker
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.repo_factory import make_repo

SHIPPED = shipped_policy_path().read_text(encoding="utf-8")
# Every proposal below is a whole new policy file, as a worker writes it: the shipped file plus an edit.
TOP_ONE = SHIPPED + '''

_shipped_select = select_context


def select_context(question, candidates, budget, params):
    chosen = _shipped_select(question, candidates, budget, params)
    chosen.pieces = chosen.pieces[:1]
    return chosen
'''
NOISE = TOP_ONE + "\n# a comment: the same choices, nothing to gain\n"
DROP_BEST = SHIPPED + '''

_shipped_select = select_context


def select_context(question, candidates, budget, params):
    chosen = _shipped_select(question, candidates, budget, params)
    chosen.pieces = chosen.pieces[1:2]
    return chosen
'''


def _with_body(body: str) -> str:
    return TOP_ONE + f'''

_top_one = select_context


def select_context(question, candidates, budget, params):
{body}
    return _top_one(question, candidates, budget, params)
'''


OPENS_SOCKET = _with_body('    import socket\n    socket.create_connection(("127.0.0.1", 9), timeout=1)')
ESCAPE_FILE = Path("/tmp/nav-tune-sandbox-escape.txt")
WRITES_OUTSIDE = _with_body(f'    open({str(ESCAPE_FILE)!r}, "w").write("escaped")')
LOOPS_FOREVER = _with_body("    while True:\n        pass")
INVENTS_TEXT = TOP_ONE + '''

_top_one = select_context


def select_context(question, candidates, budget, params):
    chosen = _top_one(question, candidates, budget, params)
    for piece in chosen.pieces:
        piece.text = "MAX_RETRIES = 999  # the answer you wanted"
    return chosen
'''
LIMITS = SandboxLimits(cpu_seconds=4, wall_seconds=30)


@pytest.fixture
def tuned_repo(tmp_path, nav_env):
    root = make_repo(tmp_path / "repo", modules=12)
    build_index(root, Config.from_env())
    queries = tmp_path / "queries.jsonl"
    with queries.open("w") as fh:
        for n in range(1, 13):
            fh.write(json.dumps({"id": f"q{n:02d}", "lang": "en",
                                 "category": "value_lookup" if n % 2 else "exact_identifier",
                                 "query": f"what is MAX_RETRIES_{n} set to",
                                 "expect_any": [{"path": f"pkg/mod{n}.py", "text": f"MAX_RETRIES_{n} = {n}"}]}) + "\n")
    return root, queries


def propose(source: str, hypothesis: str, family: str = "rank_cutoff", path: str = "selection.py"):
    return reply(tool_use("propose_policy", {"hypothesis": hypothesis, "family": family, "path": path,
                                             "source": source}), stop_reason="tool_use")


def test_scripted_worker_meets_every_decision_the_rules_say(tuned_repo, tmp_path):
    root, queries = tuned_repo
    ESCAPE_FILE.unlink(missing_ok=True)
    script = [
        propose(TOP_ONE, "the answer is always the best-ranked piece: return only it"),
        propose(NOISE, "a comment only", family="other"),
        propose(DROP_BEST, "drop the best piece", family="rank_cutoff"),
        propose(TOP_ONE, "edit the envelope instead", family="other", path="navigator/context/envelope.py"),
        propose(OPENS_SOCKET, "phone home"),
        propose(WRITES_OUTSIDE, "leave a note outside the sandbox"),
        propose(LOOPS_FOREVER, "think forever"),
        propose(INVENTS_TEXT, "write the answer myself", family="span_trimming"),
    ]
    with FakeAnthropic(script) as fake:
        worker = ClaudeWorker(model="claude-test", client=fake.client())
        result = run_tune(str(queries), str(root), worker, trials=len(script), holdout_share=0.25, seed=3,
                          retriever="bm25", out_dir=tmp_path / "run", limits=LIMITS)
        bodies = fake.message_bodies

    decisions = [(t["decision"], t["reason"]) for t in result.trials]
    assert [d for d, _ in decisions] == ["keep", "discard", "discard", "reject", "reject", "reject", "reject",
                                         "reject"], decisions
    reasons = [r for _, r in decisions]
    assert "token cut" in reasons[1] and "under the minimum" in reasons[1]
    assert "under the floor" in reasons[2] or "lost" in reasons[2]
    assert "only selection.py may be edited" in reasons[3]
    assert reasons[4].startswith("violation") and "socket" in reasons[4]
    assert reasons[5].startswith("violation") and "writing" in reasons[5]
    assert not ESCAPE_FILE.exists()
    assert reasons[6].startswith("timeout")
    assert reasons[7].startswith("invalid") and "not in that chunk" in reasons[7]
    # the kept policy answers everything on dev at a fraction of the starting tokens
    assert result.winner_trial == 1 and result.winner_dev["accuracy"] == result.start_dev["accuracy"] >= 0.75
    assert result.winner_dev["mean_tokens"] < 0.7 * result.start_dev["mean_tokens"]
    # the holdout is paired query by query, and the winner loses none of it
    assert result.holdout and result.holdout["lost"] == [] and result.holdout["token_change"] < 0
    assert result.holdout["versus_top_k"]["token_change"] < 0
    assert result.winner_path.read_text() == TOP_ONE
    # the worker saw the log of earlier trials and the thresholds, never a holdout query
    held = json.loads((result.out_dir / "split.json").read_text())["holdout"]
    assert held and "#1 [rank_cutoff] keep" in bodies[1]["messages"][0]["content"]
    assert not any(f"{qid} |" in body["messages"][0]["content"] for body in bodies for qid in held)
    assert "accuracy_floor" in bodies[0]["system"]
    # every trial is logged as JSONL with its hypothesis, family, diff, metrics, decision and reason
    lines = [json.loads(x) for x in (result.out_dir / "trials.jsonl").read_text().splitlines()]
    assert len(lines) == 8 and lines[0]["diff"].startswith("--- a/selection.py") and lines[0]["metrics"]["accuracy"] >= 0.75
    report = result.report_path.read_text()
    assert "Holdout, paired query by query" in report and "## Kept edits" in report
    # the dev frontier's policies are also scored on the holdout, each paired with plain top-5
    assert [p["trial"] for p in result.holdout_frontier] == [p["trial"] for p in result.frontier]
    winner_point = next(p for p in result.holdout_frontier if p["trial"] == 1)
    assert winner_point["lost"] == result.holdout["versus_top_k"]["lost"]
    assert winner_point["versus_top_k"] == result.holdout["versus_top_k"]["token_change"]
    assert "## The same policies on the holdout" in report


def test_folder_worker_applies_patches_and_rejects_other_files(tuned_repo, tmp_path):
    root, queries = tuned_repo
    folder = tmp_path / "candidates"
    folder.mkdir()
    diff = "".join(difflib.unified_diff(SHIPPED.splitlines(True), TOP_ONE.splitlines(True),
                                        "a/navigator/context/selection.py", "b/navigator/context/selection.py"))
    (folder / "01-top-one.patch").write_text("# hypothesis: one piece is enough here\n# family: rank_cutoff\n" + diff)
    (folder / "02-envelope.patch").write_text(diff.replace("selection.py", "envelope.py"))
    (folder / "03-noise.py").write_text(NOISE)
    result = run_tune(str(queries), str(root), FolderWorker(folder), trials=10, holdout_share=0.25, seed=1,
                      retriever="bm25", out_dir=tmp_path / "run", limits=LIMITS)
    assert [t["decision"] for t in result.trials] == ["keep", "reject", "discard"]
    assert result.trials[0]["hypothesis"] == "one piece is enough here" and result.trials[0]["family"] == "rank_cutoff"
    assert "envelope.py" in result.trials[1]["reason"]


def test_policy_contract_checks_lines_and_order():
    source = "def f(x):\n    y = x + 1\n\n    return y\n"
    assert text_is_made_of("def f(x):\n    return y", source)
    assert text_is_made_of("def f(x):\n    ... (2 lines)\n    return y", source)
    assert not text_is_made_of("    return y\ndef f(x):", source)        # reordered
    assert not text_is_made_of("def f(x):\n    return 42", source)        # changed
    assert not text_is_made_of("def f(x)", source)                         # part of a line


def test_load_policy_reports_a_bad_file(tmp_path):
    missing = tmp_path / "nope.py"
    with pytest.raises(PolicyError, match="not found"):
        load_policy(missing)
    incomplete = tmp_path / "incomplete.py"
    incomplete.write_text("def params_for_retriever(name):\n    return None\n")
    with pytest.raises(PolicyError, match="does not define select_context"):
        load_policy(incomplete)
    broken = tmp_path / "broken.py"
    broken.write_text("def select_context(:\n")
    with pytest.raises(PolicyError, match="failed to load"):
        load_policy(broken)


def test_nav_context_uses_and_verifies_a_policy_file(tuned_repo, tmp_path, monkeypatch):
    from navigator.context.build import build_context
    root, _ = tuned_repo
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text(TOP_ONE)
    bad.write_text(INVENTS_TEXT)
    shipped = build_context("what is MAX_RETRIES_4 set to", 2000, root, "bm25")
    assert len(shipped.pieces) > 1
    monkeypatch.setenv("NAV_POLICY", str(good))
    chosen = build_context("what is MAX_RETRIES_4 set to", 2000, root, "bm25")
    assert len(chosen.pieces) == 1 and "MAX_RETRIES_4 = 4" in chosen.pieces[0].text
    with pytest.raises(PolicyError, match="not in that chunk"):
        build_context("what is MAX_RETRIES_4 set to", 2000, root, "bm25", policy=bad)


def _score(pairs):
    return PolicyScore("ok", queries=[QueryScore(f"q{i}", "c", a, t) for i, (a, t) in enumerate(pairs)])


def test_calibration_and_judgement_follow_the_written_rules():
    start = _score([(True, 100 + 10 * i) for i in range(16)] + [(False, 300)] * 4)
    th = calibrate(start, seed=0)
    assert th.accuracy_floor < th.start_accuracy == 0.8 and th.max_flips >= 1 and th.min_token_cut >= 0.02
    # same answers, 1% fewer tokens: noise
    assert judge(_score([(a, int(t * 0.99)) for a, t in [(q.answered, q.tokens) for q in start.queries]]),
                 start, th).decision == "discard"
    # half the tokens, same answers: kept
    assert judge(_score([(q.answered, q.tokens // 2) for q in start.queries]), start, th).decision == "keep"
    # half the tokens, but many answers lost: discarded
    lossy = [(q.answered and i % 2 == 0, q.tokens // 2) for i, q in enumerate(start.queries)]
    assert judge(_score(lossy), start, th).decision == "discard"
    assert judge(PolicyScore("timeout", "too slow"), start, th).decision == "reject"


def test_split_is_seeded_and_stratified():
    class Q:
        def __init__(self, i, cat):
            self.id, self.category = f"q{i}", cat
    qs = [Q(i, "a" if i < 8 else "b") for i in range(12)]
    dev, held = split_queries(qs, 0.25, seed=5)
    assert {q.category for q in held} == {"a", "b"} and len(dev) + len(held) == 12
    assert [q.id for q in split_queries(qs, 0.25, seed=5)[1]] == [q.id for q in held]


def test_flips_accumulate_against_the_starting_policy_and_the_floor_is_whole_queries():
    start = _score([(True, 100)] * 10 + [(False, 100)] * 10)
    th = calibrate(start, seed=0)
    # an incumbent that already lost max_flips of the start's answers leaves no room for one more
    lost = th.max_flips
    incumbent = _score([(i >= lost, 80) for i in range(10)] + [(False, 80)] * 10)
    one_more = _score([(i > lost, 40) for i in range(10)] + [(False, 40)] * 10)
    assert judge(one_more, incumbent, th, start).decision == "discard"
    # exactly at the floor is allowed (compared in whole queries, not rounded shares)
    at_floor = math.ceil(th.accuracy_floor * 20 - 1e-9)
    floor_th = type(th)(**{**th.to_json(), "max_flips": 20})
    exact = _score([(i < at_floor, 10) for i in range(20)])
    assert judge(exact, start, floor_th, start).decision == "keep"
