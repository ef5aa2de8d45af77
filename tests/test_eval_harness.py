"""The evaluation harness on hand-made rankings: no index, no model."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from chunkers.base import CodeChunk
from navigator.core.errors import InputError, LeakageError, QueryFileError, UsageError
from navigator.evaluation import (
    EvalQuery, EvalRun, ExpectItem, Unanswerable, check_leakage, compare_runs, find_unanswerable,
    load_queries, load_run, paired_bootstrap_ci, prepare_query_set, render_ceiling_table,
    render_comparison, render_eval_table, run_eval, with_head_views,
)
from navigator.evaluation import metrics
from retrievers.base import HeadHit, RetrievedChunk

FAST_RESAMPLES = 2000


@dataclass
class Chunk:
    path: str
    text: str
    tokens: int = 10
    heads: dict = field(default_factory=dict)


def write_lines(tmp_path: Path, lines: list, name: str = "queries.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return path


def q_any(qid: str, *items: ExpectItem, category: str = "lookup", lang: str = "en", query: str | None = None):
    return EvalQuery(qid, lang, category, query or f"question {qid}", "any", list(items), 1)


def q_all(qid: str, *items: ExpectItem, category: str = "cross", lang: str = "en", query: str | None = None):
    return EvalQuery(qid, lang, category, query or f"question {qid}", "all", list(items), 1)


# ---------------------------------------------------------------- metrics

RANKING = [
    Chunk("b.py", "import os\n", tokens=5),
    Chunk("a.py", "MAX_STEPS = 20\n", tokens=7),
    Chunk("b.py", "def helper():\n    return 1\n", tokens=11),
    Chunk("c.py", "def chunk_repository(root):\n    pass\n", tokens=13),
    Chunk("a.py", "def run_loop():\n    pass\n", tokens=17),
]


def test_item_ranks_are_first_matching_chunk_and_none_when_absent():
    items = [ExpectItem("a.py", "MAX_STEPS = "), ExpectItem("b.py"), ExpectItem("a.py", "def run_loop("),
             ExpectItem("a.py", "not there"), ExpectItem("d.py")]
    assert metrics.item_ranks(RANKING, items) == [2, 1, 5, None, None]


def test_hit_is_any_item_and_coverage_is_share_of_items():
    items = [ExpectItem("c.py", "def chunk_repository("), ExpectItem("a.py", "def run_loop(")]
    ranks = metrics.item_ranks(RANKING, items)  # [4, 5]
    assert [metrics.hit_at_k(ranks, k) for k in (1, 3, 4, 5)] == [0.0, 0.0, 1.0, 1.0]
    assert [metrics.coverage_at_k(ranks, k) for k in (1, 4, 5)] == [0.0, 0.5, 1.0]
    assert metrics.score_at_k(ranks, 4, "any") == 1.0
    assert metrics.score_at_k(ranks, 4, "all") == 0.5


def test_text_straddling_two_chunks_matches_neither():
    split = [Chunk("x.py", "def long_name(\n"), Chunk("x.py", "    arg):\n")]
    assert metrics.item_ranks(split, [ExpectItem("x.py", "def long_name(\n    arg)")]) == [None]


def test_match_uses_chunk_text_not_header_and_reads_retrieved_chunks():
    code = CodeChunk("m.py", 3, 4, "method", "    def parse(self):\n        pass\n", header="class Parser:")
    retrieved = [RetrievedChunk(code, score=1.0, rank=1, heads={"bm25": HeadHit(rank=4, score=2.0)})]
    assert metrics.item_ranks(retrieved, [ExpectItem("m.py", "def parse(")]) == [1]
    assert metrics.item_ranks(retrieved, [ExpectItem("m.py", "class Parser:")]) == [None]
    assert metrics.view_chunk(retrieved[0]).heads == {"bm25": 4}
    assert metrics.view_chunk(retrieved[0].to_json()).tokens == code.tokens


def test_file_level_ranks_files_by_first_appearance():
    items = [ExpectItem("a.py", "text ignored at file level"), ExpectItem("c.py")]
    assert metrics.file_order(RANKING) == ["b.py", "a.py", "c.py"]
    ranks = metrics.file_ranks(RANKING, items)
    assert ranks == [2, 3]
    assert metrics.file_acc_at_k(ranks, 2, "all") == 0.0
    assert metrics.file_acc_at_k(ranks, 3, "all") == 1.0
    assert metrics.file_acc_at_k(ranks, 2, "any") == 1.0
    assert metrics.file_prefix_tokens(RANKING, 2) == 5 + 7 + 11  # until a third file appears


def test_ceiling_at_pool_is_reachable_score_within_pool():
    assert metrics.ceiling_at_pool([30, None], 20, "any") == 0.0
    assert metrics.ceiling_at_pool([30, None], 50, "any") == 1.0
    assert metrics.ceiling_at_pool([3, 30, None], 50, "all") == pytest.approx(2 / 3)
    assert metrics.ceiling_at_pool([None], 100, "all") == 0.0


def test_budget_metrics():
    returned = [Chunk("a.py", "MAX_STEPS = 20", tokens=30), Chunk("z.py", "noise", tokens=70)]
    items = [ExpectItem("a.py", "MAX_STEPS"), ExpectItem("c.py")]
    assert metrics.recall_at_budget(returned, items, "any") == 1.0
    assert metrics.recall_at_budget(returned, items, "all") == 0.5
    assert metrics.recall_at_budget([], items, "any") == 0.0
    assert metrics.wasted_tokens(returned, items) == 70
    assert metrics.wasted_context_ratio(returned, items) == pytest.approx(0.7)
    assert metrics.wasted_context_ratio([], items) == 0.0
    assert metrics.tokens_per_answered([100, 300, 200], [1.0, 0.0, 1.0]) == pytest.approx(300.0)
    assert metrics.tokens_per_answered([100], [0.5]) is None


# ---------------------------------------------------------------- runner

def test_run_eval_scores_truncates_to_depth_and_measures_heads():
    queries = [q_any("q1", ExpectItem("c.py", "def chunk_repository(")),
               q_all("q2", ExpectItem("a.py", "MAX_STEPS"), ExpectItem("b.py", "def helper("))]
    ranking = [Chunk(c.path, c.text, c.tokens, {"bm25": len(RANKING) - i}) for i, c in enumerate(RANKING)]
    ranking[1].heads["vector"] = 1  # only the MAX_STEPS chunk carries a vector rank
    asked = []

    def rank_fn(text: str, depth: int):
        asked.append(depth)
        return ranking + [Chunk("c.py", "def chunk_repository(")] * 300  # more than asked for

    run = run_eval(queries, rank_fn, ks=(5, 1, 3), depth=200, retriever="hybrid")
    assert asked == [200, 200] and run.ks == (1, 3, 5)
    q1, q2 = run.results
    assert q1.returned == 200
    assert q1.fused.item_ranks == [4] and [run.score(q1, k) for k in run.ks] == [0.0, 0.0, 1.0]
    assert [run.score(q2, k) for k in run.ks] == [0.0, 1.0, 1.0]
    assert run.tokens(q1, 3) == 5 + 7 + 11
    bm25 = run.head_view("bm25")  # bm25 reversed the order
    assert bm25.retriever == "hybrid/bm25" and bm25.results[0].fused.item_ranks == [2]
    vector = run.head_view("vector")
    assert vector.results[1].fused.item_ranks == [1, None]
    assert list(with_head_views(run)) == ["hybrid", "hybrid/bm25", "hybrid/vector"]


def test_run_eval_file_level_uses_file_ranks():
    queries = [q_all("q1", ExpectItem("a.py", "anything"), ExpectItem("c.py"))]
    run = run_eval(queries, lambda text, depth: RANKING, ks=(1, 2, 3), level="file")
    assert [run.score(run.results[0], k) for k in (1, 2, 3)] == [0.0, 0.0, 1.0]


def test_run_eval_rejects_depth_below_k_and_unknown_level():
    with pytest.raises(UsageError, match="depth 5"):
        run_eval([], lambda t, d: [], ks=(1, 10), depth=5)
    with pytest.raises(UsageError, match="level"):
        run_eval([], lambda t, d: [], level="line")


def test_saved_run_round_trips(tmp_path):
    queries = [q_any("q1", ExpectItem("a.py", "MAX_STEPS")), q_all("q2", ExpectItem("b.py"), ExpectItem("z.py"))]
    run = run_eval(queries, lambda t, d: RANKING, ks=(1, 3), depth=10, retriever="bm25",
                   unanswerable=[Unanswerable("q2", ExpectItem("z.py"), "path not in the indexed corpus")])
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps(run.to_json()))
    loaded = load_run(saved)
    assert [[loaded.score(r, k) for k in loaded.ks] for r in loaded.results] == [[0.0, 1.0], [0.5, 0.5]]
    assert loaded.results[1].fused.item_ranks == [1, None]
    assert loaded.unanswerable == run.unanswerable
    (tmp_path / "bad.json").write_text('{"format": "something else"}')
    with pytest.raises(InputError, match="not a saved nav eval run"):
        load_run(tmp_path / "bad.json")


# ---------------------------------------------------------------- query files

GOOD = {"id": "q1", "lang": "en", "category": "lookup", "query": "max steps",
        "expect_any": [{"path": "a.py", "text": "MAX_STEPS = "}]}


def test_load_queries_accepts_format_with_blank_lines_unknown_fields_and_bom(tmp_path):
    lines = [
        GOOD,
        "",
        {"id": 7, "lang": "zh", "category": "cross", "query": "流程", "difficulty": "hard",
         "expect_all": [{"path": "./b.py"}, {"path": "c.py", "text": "def f(", "line": 3}]},
        {"id": "q3", "query": "no lang or category", "expect_any": [{"path": "d.py", "text": None}]},
    ]
    path = write_lines(tmp_path, lines)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    first, second, third = load_queries(path)
    assert (first.mode, first.items, first.line) == ("any", [ExpectItem("a.py", "MAX_STEPS = ")], 1)
    assert (second.id, second.mode, second.line) == ("7", "all", 3)
    assert second.items == [ExpectItem("b.py"), ExpectItem("c.py", "def f(")]
    assert third.items == [ExpectItem("d.py")] and third.lang == third.category == "(none)"


@pytest.mark.parametrize("line, message", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "a JSON list where an object"),
    ({**GOOD, "id": ""}, '"id" is missing'),
    ({k: v for k, v in GOOD.items() if k != "query"}, '"query" is missing'),
    ({**GOOD, "expect_all": [{"path": "b.py"}]}, "has both expect_any and expect_all"),
    ({k: v for k, v in GOOD.items() if k != "expect_any"}, "has neither of expect_any and expect_all"),
    ({**GOOD, "expect_any": []}, '"expect_any" must be a non-empty list'),
    ({**GOOD, "expect_any": ["a.py"]}, "expect_any item 1 is not an object"),
    ({**GOOD, "expect_any": [{"text": "x"}]}, 'expect_any item 1: "path" is missing'),
    ({**GOOD, "expect_any": [{"path": "a.py", "text": ""}]}, 'expect_any item 1: "text" must be a non-empty string'),
    ({**GOOD, "expect_any": [{"path": "/abs/a.py"}]}, 'expect_any item 1: path "/abs/a.py" must be relative'),
    ({**GOOD, "lang": 3}, '"lang" must be a non-empty string'),
])
def test_each_kind_of_malformed_line_is_reported_with_its_line_number(tmp_path, line, message):
    other = {**GOOD, "id": "q0"}
    path = write_lines(tmp_path, [other, "", line])
    with pytest.raises(QueryFileError) as raised:
        load_queries(path)
    assert f"line 3: {message}" in raised.value.message
    assert "1 malformed line;" in raised.value.message and raised.value.hint


def test_all_malformed_lines_and_duplicate_ids_are_listed_together(tmp_path):
    path = write_lines(tmp_path, [GOOD, "{bad", GOOD, {**GOOD, "id": "q2"}, {**GOOD, "id": "q3", "query": 5}])
    with pytest.raises(QueryFileError) as raised:
        load_queries(path)
    message = raised.value.message
    assert "3 malformed lines" in message
    assert "line 2: not valid JSON" in message
    assert 'line 3: duplicate id "q1" (first on line 1)' in message
    assert "line 5:" in message and "line 4:" not in message


@pytest.mark.parametrize("content", ["", "\n   \n\n"])
def test_empty_query_file_is_refused(tmp_path, content):
    path = tmp_path / "empty.jsonl"
    path.write_text(content)
    with pytest.raises(QueryFileError, match="holds no queries"):
        load_queries(path)


def test_missing_and_non_utf8_query_files(tmp_path):
    with pytest.raises(QueryFileError, match="does not exist"):
        load_queries(tmp_path / "nope.jsonl")
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(json.dumps(GOOD).encode() + b"\n" + b'{"id": "caf\xe9"}\n')
    with pytest.raises(QueryFileError, match="line 2 is not valid UTF-8"):
        load_queries(path)


def test_find_unanswerable_reports_missing_paths_texts_and_split_texts():
    queries = [
        q_any("q1", ExpectItem("a.py", "MAX_STEPS = "), ExpectItem("pkg/missing.py")),
        q_all("q2", ExpectItem("a.py", "not in file"), ExpectItem("b.py")),
        q_any("q3", ExpectItem("a.py", "STEPS = 20\ndef run")),
    ]
    corpus = {"a.py": "MAX_STEPS = 20\ndef run():\n    pass\n", "b.py": "", "src/pkg/missing.py": "x = 1\n"}
    chunks = {"a.py": ["MAX_STEPS = 20\n", "def run():\n    pass\n"]}
    found = find_unanswerable(queries, corpus, chunk_texts=chunks)
    assert [(u.query_id, u.item.path) for u in found] == [("q1", "pkg/missing.py"), ("q2", "a.py"), ("q3", "a.py")]
    assert "did you mean src/pkg/missing.py?" in found[0].reason
    assert found[1].reason == "text not found in the file"
    assert "spans a chunk boundary" in found[2].reason
    assert len(find_unanswerable(queries, corpus)) == 2  # without chunks the split text is in the file


# ---------------------------------------------------------------- leakage

LEAK_QUERIES = [
    q_any("q1", ExpectItem("agent/loop.py", "MAX_STEPS = "), query="what is the maximum number of agent steps"),
    q_all("q2", ExpectItem("indexer/chunker.py", 'def chunk_repository("'), ExpectItem("docs/x.md"),
          query="which modules does indexing pass through"),
    q_any("q3", ExpectItem("agent/loop.py", "def run("), lang="zh", query="代理循环在哪里运行"),
]
CODE = {
    "agent/loop.py": 'MAX_STEPS = 20\ndef run():\n    pass\n',
    "indexer/chunker.py": 'def chunk_repository("root"):\n    pass\n',
    "docs/x.md": "# which modules does indexing pass through? see the chunker\n",
}


def test_leakage_refuses_indexed_query_file_and_names_it(tmp_path):
    (tmp_path / "eval").mkdir()
    query_file = write_lines(tmp_path, [GOOD], name="eval/queries.jsonl")
    indexed = {**CODE, "eval/queries.jsonl": query_file.read_text()}
    with pytest.raises(LeakageError) as raised:
        check_leakage(query_file, LEAK_QUERIES, tmp_path, indexed)
    assert "eval/queries.jsonl (the query file itself)" in raised.value.message
    assert "nav index --skip eval/queries.jsonl" in raised.value.hint


def test_leakage_refuses_a_copy_of_the_set_even_json_escaped(tmp_path):
    copy = "\n".join(json.dumps({"query": q.query, "expect": [vars(it) for it in q.items]}) for q in LEAK_QUERIES)
    assert "\\u" in copy and '\\"' in copy  # escaped forms, not the raw texts
    with pytest.raises(LeakageError) as raised:
        check_leakage(tmp_path.parent / "elsewhere.jsonl", LEAK_QUERIES, tmp_path, {**CODE, "notes/set.jsonl": copy})
    assert "notes/set.jsonl" in raised.value.message and "agent/loop.py" not in raised.value.message


def test_leakage_clean_cases(tmp_path):
    inside_but_skipped = tmp_path / "queries.jsonl"
    # The code holds every expected text, and a doc holds one query: neither is the answer key.
    check_leakage(inside_but_skipped, LEAK_QUERIES, tmp_path, CODE)
    questions_only = "\n".join(q.query for q in LEAK_QUERIES)
    check_leakage(tmp_path.parent / "q.jsonl", LEAK_QUERIES, tmp_path, {**CODE, "faq.md": questions_only})


def test_prepare_query_set_loads_guards_and_lists_unanswerable(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    path = write_lines(tmp_path, [GOOD, {**GOOD, "id": "q2", "expect_any": [{"path": "gone.py"}]}])
    queries, unanswerable = prepare_query_set(path, repo, {"a.py": "MAX_STEPS = 3\n"})
    assert [q.id for q in queries] == ["q1", "q2"]
    assert [(u.query_id, u.item.path) for u in unanswerable] == [("q2", "gone.py")]


# ---------------------------------------------------------------- compare

def synthetic_run(name: str, answered: set[int], n: int = 40, tokens: int = 10, skip: set[int] = frozenset()):
    """Queries 0..n-1 (even: category a, odd: b); the item ranks 1st for `answered` ids, else is absent."""
    queries = [q_any(f"q{i}", ExpectItem(f"f{i}.py"), category="ab"[i % 2], query=str(i))
               for i in range(n) if i not in skip]

    def rank_fn(text: str, depth: int):
        hit = int(text) in answered
        return [Chunk(f"f{text}.py" if hit else "other.py", "x", tokens=tokens)] * 3

    return run_eval(queries, rank_fn, ks=(1, 5), depth=10, retriever=name)


def test_compare_pairs_by_id_and_finds_gained_and_lost():
    a = synthetic_run("A", answered=set(range(0, 20)), skip={39})
    b = synthetic_run("B", answered=set(range(5, 25)), skip={0}, tokens=12)
    c = compare_runs(a, b, k=5, resamples=FAST_RESAMPLES)
    assert c.paired == 38
    assert c.gained == [f"q{i}" for i in range(20, 25)]
    assert c.lost == [f"q{i}" for i in range(1, 5)]  # q0 is only in A: not paired
    assert (c.only_in_a, c.only_in_b) == (["q0"], ["q39"])
    categories = {d.group: d for d in c.by_category["any"]}
    assert categories["a"].n + categories["b"].n == 38
    assert c.overall["any"].diff == pytest.approx((5 - 4) / 38)
    assert c.tokens.diff == pytest.approx(3 * 2)
    text = render_comparison(c)
    assert "only in A, not paired, 1: q0" in text and "q20 q21 q22 q23 q24" in text


def test_bootstrap_interval_excludes_zero_for_big_difference_and_includes_it_for_none():
    worse = synthetic_run("A", answered=set(range(0, 10)))
    better = synthetic_run("B", answered=set(range(0, 30)))
    big = compare_runs(worse, better, k=1, resamples=FAST_RESAMPLES).overall["any"]
    assert big.diff == pytest.approx(0.5) and big.ci_low > 0 and big.excludes_zero

    shuffled = synthetic_run("C", answered=set(range(5, 15)))  # 5 gained, 5 lost
    none = compare_runs(worse, shuffled, k=1, resamples=FAST_RESAMPLES).overall["any"]
    assert none.diff == 0 and none.ci_low < 0 < none.ci_high and not none.excludes_zero

    again = compare_runs(worse, shuffled, k=1, resamples=FAST_RESAMPLES).overall["any"]
    assert (again.ci_low, again.ci_high) == (none.ci_low, none.ci_high)  # seeded
    assert paired_bootstrap_ci([0.0] * 10, resamples=100) == (0.0, 0.0)


def test_compare_refuses_unmeasured_k_and_mixed_levels():
    a = synthetic_run("A", answered={1})
    with pytest.raises(UsageError, match="k=3"):
        compare_runs(a, a, k=3)
    file_level = EvalRun.from_json({**a.to_json(), "level": "file"})
    with pytest.raises(UsageError, match="chunk-level run with a file-level run") as raised:
        compare_runs(a, file_level)
    assert "same --level" in raised.value.hint


# ---------------------------------------------------------------- reports

def table_row(text: str, title: str, label: str) -> list[str]:
    """The cells of row `label` in the block titled `title`."""
    block = text.split(title, 1)[1].split("\n\n", 1)[0]
    return next(line.split() for line in block.splitlines() if line.startswith(label + " "))


def test_eval_table_shows_n_per_cell_and_keeps_hit_and_coverage_apart():
    queries = [q_any("q1", ExpectItem("a.py", "MAX_STEPS")), q_any("q2", ExpectItem("c.py"), lang="zh"),
               q_any("q3", ExpectItem("zz.py")),
               q_all("q4", ExpectItem("a.py", "MAX_STEPS"), ExpectItem("zz.py"))]
    fused = run_eval(queries, lambda t, d: RANKING, ks=(1, 3, 5), depth=10, retriever="hybrid",
                     unanswerable=[Unanswerable("q3", ExpectItem("zz.py"), "path not in the indexed corpus")])
    other = run_eval(queries[:2], lambda t, d: RANKING[::-1], ks=(1, 3, 5), depth=10, retriever="bm25")
    text = render_eval_table({"hybrid": fused, "bm25": other})
    hit_title, coverage_title = "hit@k, expect_any", "coverage@k, expect_all"
    # group, then per run: n @1 @3 @5
    assert table_row(text, hit_title, "category lookup")[2:] == [
        "3", "0.000", "0.333", "0.667", "|", "2", "0.000", "0.500", "1.000"]
    assert table_row(text, hit_title, "lang zh")[2] == "1"
    assert table_row(text, hit_title, "overall")[1] == "3"
    assert table_row(text, coverage_title, "overall")[1:6] == ["1", "0.000", "0.500", "0.500", "|"]
    assert "category lookup" not in text.split(coverage_title, 1)[1].split("\n\n", 1)[0]
    assert table_row(text, "mean tokens of the top k", "overall")[1:3] == ["4", "5.0"]
    assert "q3  zz.py: path not in the indexed corpus" in text


def test_ceiling_table_buckets_ranks_and_reports_pool_ceilings():
    ranking = [Chunk("other.py", "x")] * 60 + [Chunk("deep.py", "x")] + [Chunk("near.py", "x")]
    queries = [q_any("q1", ExpectItem("near.py"), ExpectItem("deep.py")), q_any("q2", ExpectItem("gone.py"))]
    run = run_eval(queries, lambda t, d: ranking, depth=80)
    text = render_ceiling_table(run, pools=(5, 70, 100))
    assert table_row(text, "rank of each expected item", "overall")[1:] == [
        "3", "0", "(0%)", "0", "(0%)", "2", "(67%)", "1", "(33%)"]
    assert table_row(text, "ceiling: the hit", "overall")[1:] == ["2", "0.000", "0.500", "-"]
    assert "raise --depth" in text


# ---------------------------------------------------------------- nav eval --html

def test_html_page_shows_the_runs_figures_and_embeds_them_as_svg(tmp_path):
    """navigator.evaluation.html_report: every number in the page (its table and the JSON the charts were drawn
    from) equals what the run's JSON says (mean of each query's score per group), and the charts are inline
    SVG with their text kept as text, so the page opens offline."""
    import re
    from navigator.evaluation.html_report import render_html
    queries = [q_any("a1", ExpectItem("a.py", "MAX_STEPS = "), category="value"),
               q_any("a2", ExpectItem("c.py", "def chunk_repository("), category="exact", lang="zh"),
               q_any("a3", ExpectItem("a.py", "not there"), category="exact"),
               q_all("x1", ExpectItem("a.py", "def run_loop("), ExpectItem("b.py", "def helper("))]
    runs = {name: run_eval(queries, lambda q, depth, ranking=ranking: ranking, ks=(1, 3, 5), depth=5,
                           retriever=name)
            for name, ranking in (("fused", RANKING), ("reversed", list(reversed(RANKING))))}
    page = render_html(runs, "nav eval: test")
    assert page.count("<svg") == 4 and "http://" not in page.split("<svg", 1)[0]
    assert "<text" in page and "hit@k" in page                  # svg.fonttype none: labels are text
    data = json.loads(re.search(r'<script type="application/json" id="nav-eval-figures">(.*?)</script>', page,
                                re.S).group(1))
    for name, run in runs.items():
        saved = run.to_json()["queries"]
        for mode, metric in (("any", "hit"), ("all", "coverage")):
            for group, pick in (("overall", lambda q: True), ("category exact", lambda q: q["category"] == "exact"),
                                ("lang zh", lambda q: q["lang"] == "zh")):
                chosen = [q for q in saved if q["mode"] == mode and pick(q)]
                if not chosen:
                    assert group not in data[name].get(metric, {})
                    continue
                for k in ("1", "3", "5"):
                    expected = round(sum(q["scores"][k] for q in chosen) / len(chosen), 4)
                    assert data[name][metric][group][k] == expected
                    cell = re.search(rf"data-retriever='{name}' data-metric='{metric}' data-group='{group}'>"
                                     rf".*?<td data-k='{k}'>([0-9.]+)</td>", page)
                    assert float(cell.group(1)) == pytest.approx(expected, abs=5e-4)
    assert data["fused"]["coverage"]["overall"]["3"] == 0.5 and data["reversed"]["coverage"]["overall"]["3"] == 1.0
