"""`nav cost`: the price table, the long-context paste (whole or the largest part that fits), the token
arithmetic of one turn and of a session, and a report over a real small repository and query set."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from chunkers.base import estimate_tokens
from navigator.core.config import Config
from navigator.core.errors import InputError, UsageError
from navigator.evaluation.cost import (DEFAULT_PRICES, ModelPrice, crossover_turn, file_block, load_price_table,
                                       paste_repository, session_inputs, turns_that_fit, cost_report)
from tests.repo_factory import make_repo, write

TABLE = """prices_written = "2026-12-01"
note = "test prices"
answer_tokens = 100
default_model = "big"

[models.big]
input_per_mtok = 3.0
output_per_mtok = 15.0
window = 1000000

[models.small]
input_per_mtok = 1.0
output_per_mtok = 5.0
window = {small_window}
"""


def test_shipped_table_loads_with_its_date_and_note():
    table = load_price_table(DEFAULT_PRICES)
    assert table.prices_written and "check" in table.note
    assert table.default_model in table.models and table.answer_tokens > 0
    assert all(m.window > 0 and m.input_per_mtok >= 0 for m in table.models.values())


def test_env_var_overrides_the_table(tmp_path, monkeypatch):
    path = write(tmp_path, "prices.toml", TABLE.format(small_window=5000))
    monkeypatch.setenv("NAV_PRICES", str(path))
    table = load_price_table()
    assert set(table.models) == {"big", "small"} and table.source == str(path)
    with pytest.raises(UsageError, match="no model 'nope'"):
        table.pick(["nope"])


@pytest.mark.parametrize("text, expected", [
    ("prices_written = \n", "not valid TOML"),
    (TABLE.format(small_window=0), "models.small.window: must be a positive whole number"),
    (TABLE.format(small_window=5000).replace("input_per_mtok = 1.0", "input_per_mtok = -1"),
     "models.small.input_per_mtok: must be a number >= 0"),
    (TABLE.format(small_window=5000).replace('prices_written = "2026-12-01"\n', ""), "prices_written: missing"),
    (TABLE.format(small_window=5000).replace('default_model = "big"', 'default_model = "huge"'), "default_model"),
    ('prices_written = "x"\nanswer_tokens = 10\n', "models: missing"),
])
def test_malformed_table_is_a_clear_error(tmp_path, text, expected):
    path = write(tmp_path, "prices.toml", text)
    with pytest.raises(InputError) as err:
        load_price_table(path)
    assert expected in err.value.message and str(path) in err.value.message and err.value.exit_code == 2


def test_every_problem_is_reported_at_once(tmp_path):
    path = write(tmp_path, "prices.toml", 'answer_tokens = 0\n[models.m]\ninput_per_mtok = "3"\nwindow = 2.5\n')
    message = pytest.raises(InputError, load_price_table, path).value.message
    for problem in ("prices_written", "answer_tokens", "models.m.input_per_mtok", "models.m.output_per_mtok",
                    "models.m.window"):
        assert problem in message


def test_paste_tokens_by_hand():
    files = {"b.py": "def f():\n    return 1", "a.md": "# Title\nsome words here"}
    # "=== a.md ===\n# Title\nsome words here\n": = = = a . md = = = (9), # Title (1 + 2), some words here (1+2+1) = 16
    # "=== b.py ===\ndef f():\n    return 1\n": = = = b . py = = = (9), def f ( ) : (5), return 1 (2 + 1) = 17
    assert estimate_tokens(file_block("a.md", files["a.md"])) == 16
    assert estimate_tokens(file_block("b.py", files["b.py"])) == 17
    whole = paste_repository(files, 33)
    assert (whole.tokens, whole.files, whole.partial, whole.total_tokens) == (33, ["a.md", "b.py"], False, 33)
    part = paste_repository(files, 32)                        # b.py no longer fits: the part that does
    assert (part.tokens, part.files, part.left_out, part.partial) == (16, ["a.md"], ["b.py"], True)
    skip = paste_repository({"a": "x " * 40, "b": "y"}, 12)   # a does not fit, b after it still does
    assert skip.files == ["b"] and skip.left_out == ["a"]


def test_session_arithmetic_by_hand_and_its_quadratic_growth():
    # long context: P=1000 once, q=10, a=100: turns 1010, 1000+20+100, 1000+30+200
    assert session_inputs(1000, 0, 10, 100, 3) == [1010, 1120, 1230]
    # nav: C=200 per turn: 210, 2*210+100, 3*210+200
    assert session_inputs(0, 200, 10, 100, 3) == [210, 520, 830]
    for turns in range(1, 40):
        long_total = sum(session_inputs(1000, 0, 10, 100, turns))
        nav_total = sum(session_inputs(0, 200, 10, 100, turns))
        assert long_total == 1000 * turns + 10 * turns * (turns + 1) / 2 + 100 * turns * (turns - 1) / 2
        assert nav_total == 210 * turns * (turns + 1) / 2 + 100 * turns * (turns - 1) / 2
    # the second difference of the session total is constant: quadratic in the turns
    totals = [sum(session_inputs(1000, 0, 10, 100, t)) for t in range(1, 8)]
    second = {totals[i + 2] - 2 * totals[i + 1] + totals[i] for i in range(len(totals) - 2)}
    assert second == {110}                                     # q + a per turn of history
    totals = [sum(session_inputs(0, 200, 10, 100, t)) for t in range(1, 8)]
    assert {totals[i + 2] - 2 * totals[i + 1] + totals[i] for i in range(len(totals) - 2)} == {310}


def test_crossover_and_window_fit():
    assert crossover_turn(1000, 200) == 9                      # (T+1)/2 * 200 >= 1000
    assert sum(session_inputs(0, 200, 0, 0, 9)) == sum(session_inputs(1000, 0, 0, 0, 9))
    assert sum(session_inputs(0, 200, 0, 0, 8)) < sum(session_inputs(1000, 0, 0, 0, 8))
    # window 2000, P=1000, q=10, a=100: turn t needs 1000 + 10t + 100(t-1) + 100 <= 2000 -> t <= 9
    assert turns_that_fit(1000, 0, 10, 100, 2000) == 9
    assert turns_that_fit(5000, 0, 10, 100, 2000) == 0
    assert ModelPrice("m", 3.0, 15.0, 10).price(1_000_000, 2000) == pytest.approx(3.0 + 0.03)


@pytest.fixture
def small_repo(tmp_path, nav_env):
    from navigator.index.indexer import build_index
    root = make_repo(tmp_path / "repo", modules=4)
    write(root, "zz_last/settings.py", "# The port the service listens on.\nLISTEN_PORT_NUMBER = 8421\n")
    build_index(root, Config.from_env())
    queries = tmp_path / "queries.jsonl"
    rows = [
        {"id": "q1", "lang": "en", "category": "constant", "query": "MAX_RETRIES_2 value",
         "expect_any": [{"path": "pkg/mod2.py", "text": "MAX_RETRIES_2 = 2"}]},
        {"id": "q2", "lang": "en", "category": "constant", "query": "LISTEN_PORT_NUMBER listens port",
         "expect_any": [{"path": "zz_last/settings.py", "text": "LISTEN_PORT_NUMBER = 8421"}]},
        {"id": "q3", "lang": "en", "category": "function", "query": "compute_1 scale value",
         "expect_all": [{"path": "pkg/mod1.py", "text": "def compute_1"}, {"path": "pkg/mod3.py", "text": "def compute_3"}]},
    ]
    queries.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root, queries


def test_report_on_a_real_repository(small_repo, tmp_path):
    from navigator.context.build import build_context
    from navigator.index.nav_index import NavIndex
    root, queries = small_repo
    index = NavIndex.open(root)
    texts = index.file_texts()
    corpus = sum(estimate_tokens(file_block(p, t)) for p, t in texts.items())
    last = estimate_tokens(file_block("zz_last/settings.py", texts["zz_last/settings.py"]))
    longest_q = max(estimate_tokens(q) for q in ("MAX_RETRIES_2 value", "LISTEN_PORT_NUMBER listens port",
                                                 "compute_1 scale value"))
    # "small" holds everything but the last file (path order): the largest part that fits.
    small_window = corpus - last + longest_q + 100
    prices = write(tmp_path, "prices.toml", TABLE.format(small_window=small_window))

    opened = []
    real_open = NavIndex.open.__func__
    with pytest.MonkeyPatch.context() as mp:   # the index (and its postings and model) opens once, not per question
        mp.setattr(NavIndex, "open", classmethod(lambda cls, *a, **k: opened.append(a) or real_open(cls, *a, **k)))
        report = cost_report(root, queries_path=str(queries), turns=4, budget=300, retriever="bm25", prices=prices)
    assert len(opened) == 1 and len(report.questions) == 3
    big, small = report.models
    assert report.corpus_tokens == corpus and big.paste_tokens == corpus and not big.partial
    assert small.partial and small.paste_tokens == corpus - last and small.left_out_files == 1

    # nav's tokens are the rendered envelope's; the arithmetic of one turn and of 4 turns, by hand
    for measured, q in zip(report.questions, [json.loads(line) for line in queries.read_text().splitlines()]):
        envelope = build_context(q["query"], 300, root, "bm25")
        assert measured.nav_tokens == estimate_tokens(envelope.render_text())
        assert measured.question_tokens == estimate_tokens(q["query"])
    n = len(report.questions)
    q_mean = sum(x.question_tokens for x in report.questions) / n
    c_mean = sum(x.nav_tokens for x in report.questions) / n
    assert big.one_turn["long"]["input_tokens"] == pytest.approx(corpus + q_mean)
    assert big.one_turn["nav"]["input_tokens"] == pytest.approx(c_mean + q_mean)
    assert big.one_turn["long"]["usd"] == pytest.approx(((corpus + q_mean) * 3.0 + 100 * 15.0) / 1e6)
    long4 = 4 * corpus + q_mean * 10 + 100 * 6                  # T*P + q*T(T+1)/2 + a*T(T-1)/2, T=4
    nav4 = (c_mean + q_mean) * 10 + 100 * 6
    assert big.session["long"]["input_tokens"] == pytest.approx(long4)
    assert big.session["nav"]["input_tokens"] == pytest.approx(nav4)
    assert big.session["nav"]["usd"] == pytest.approx((nav4 * 3.0 + 400 * 15.0) / 1e6)
    assert big.crossover_turn == math.ceil(2 * corpus / c_mean - 1)
    assert small.session["long"]["turns_fit"] == 1              # no room for a second turn's history

    # hit/coverage: the long-context arm hits when the expected text lies in the pasted part
    by_id = {x.id: x for x in report.questions}
    assert by_id["q2"].long_recall == {"big": 1.0, "small": 0.0}
    assert by_id["q1"].long_recall == {"big": 1.0, "small": 1.0} and by_id["q3"].long_recall["small"] == 1.0
    assert by_id["q1"].nav_recall == 1.0                       # bm25 finds the constant within the budget
    assert {r["category"] for r in report.routing} == {"constant", "function"}
    assert report.reference_model == "big"
    text = report.render()
    assert "partial (-1 files)" in text and "2026-12-01" in text and "routing for big" in text

    one = cost_report(root, question="LISTEN_PORT_NUMBER", models=["small"], turns=2, retriever="bm25", prices=prices)
    assert one.routing == [] and one.questions[0].nav_recall is None and one.models[0].model == "small"
    with pytest.raises(UsageError):
        cost_report(root, turns=2, prices=prices)


def test_cost_command_line(small_repo, tmp_path):
    import os
    import subprocess
    import sys
    root, queries = small_repo
    prices = write(tmp_path, "prices.toml", TABLE.format(small_window=300))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    done = subprocess.run([sys.executable, "-m", "navigator", "cost", "--queries", str(queries), "--repo", str(root),
                           "--model", "small,big", "--turns", "3", "--budget", "300", "--retriever", "bm25",
                           "--prices", str(prices), "--json"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [m["model"] for m in report["models"]] == ["small", "big"] and report["reference_model"] == "small"
    assert report["models"][0]["partial"] and report["turns"] == 3
    bad = write(tmp_path, "bad.toml", "answer_tokens = [\n")
    failed = subprocess.run([sys.executable, "-m", "navigator", "cost", "a question", "--repo", str(root),
                             "--prices", str(bad)], capture_output=True, text=True, env=env, timeout=300)
    assert failed.returncode == 2 and "not valid TOML" in failed.stderr


def test_routing_needs_more_than_one_query_of_evidence():
    from navigator.evaluation.cost import ModelCost, QuestionCost, route
    reference = ModelCost("m", 1000, 900, 3, True, 1, {}, {}, None, None)
    questions = [QuestionCost(f"a{i}", "ident", "en", 10, 90, 1.0 if i else 0.0, {"m": 1.0}) for i in range(10)]
    questions += [QuestionCost(f"b{i}", "value", "en", 10, 90, 1.0 if i < 3 else 0.0, {"m": 1.0}) for i in range(10)]
    rows = {r["category"]: r for r in route(questions, reference)}
    assert rows["ident"]["suggestion"].startswith("nav: recall 0.90 vs 1.00")      # one query of ten: not evidence
    assert rows["ident"]["nav_tokens"] == 100 and rows["ident"]["long_tokens"] == 910
    assert rows["value"]["suggestion"].startswith("long context: +0.70 recall for 9x the tokens")
    assert "only part of the repository fits m" in rows["value"]["suggestion"]
