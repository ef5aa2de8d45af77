"""Tests of the selection stage of `nav context`: the budgeted knapsack walk and rank-tiered span selection."""
from __future__ import annotations

import re
from dataclasses import replace

import pytest

from chunkers.base import CodeChunk, estimate_tokens
from navigator.core.errors import UsageError
from navigator.context.selection import (
    ELISION_MARKER, REASON_BELOW_BAR, REASON_BUDGET, REASON_DUPLICATE, REASON_NO_NEW_INFORMATION,
    SelectionParams, params_for_retriever, required_shared_terms, select_context, select_spans,
)
from retrievers.base import HeadHit, RetrievedChunk
from retrievers.query_terms import query_tokens

# Trimming off: the knapsack tests weigh whole chunks, whatever their rank.
WHOLE = SelectionParams(span_tiers=((10 ** 6, 0),))
LETTERS = "abcdfghjkmnpqrtvw"   # no vowels at the ends the stemmer looks at; made-up words stay as written
MARKER_COUNT = re.compile(r"\.\.\. \((\d+) lines\)")


def nonsense(prefix: str, n: int) -> list[str]:
    """n distinct made-up words that the tokenizer keeps verbatim (no stopwords, nothing to stem)."""
    return [f"zq{prefix}{LETTERS[i // len(LETTERS)]}{LETTERS[i % len(LETTERS)]}x" for i in range(n)]


def body(words: list[str]) -> str:
    """Assignment lines pairing the words: about 5 tokens per line."""
    return "\n".join(f"    {a} = {b}" for a, b in zip(words[::2], words[1::2]))


def chunk(path: str, start: int, text: str, symbol: str | None = None, kind: str = "function") -> CodeChunk:
    return CodeChunk(path, start, start + text.count("\n"), kind, text, symbol=symbol)


def func(path: str, start: int, name: str, words: list[str]) -> CodeChunk:
    return chunk(path, start, f"def {name}():\n{body(words)}", symbol=name)


def ranked(*items: tuple[CodeChunk, float]) -> list[RetrievedChunk]:
    return [RetrievedChunk(c, score, rank, {"vector": HeadHit(rank, score)})
            for rank, (c, score) in enumerate(items, start=1)]


def by_path(selection) -> dict[str, object]:
    return {p.chunk.location: p for p in selection.pieces}


def reasons(selection) -> dict[str, str]:
    return {f"{o.path}:{o.start_line}-{o.end_line}": o.reason for o in selection.left_out}


# ---------------------------------------------------------------- the knapsack


def test_reserve_slot_admits_one_large_necessary_unit_that_greedy_starves():
    query = "zqaaax zqaabx"
    top = func("top.py", 1, "zqtopx", ["zqaaax", "zqaabx"])
    # Two large units ranked 2 and 3: their value does not repay their tokens in the greedy pass.
    large = func("large.py", 1, "zqlargx", nonsense("l", 24))
    large2 = func("large2.py", 1, "zqlargbx", nonsense("m", 24))
    smalls = [func(f"s{i}.py", 1, f"zqsmal{LETTERS[i % 17]}{LETTERS[i // 17]}x", nonsense(LETTERS[i % 17] + LETTERS[i // 17], 4))
              for i in range(60)]
    cands = ranked((top, 1.0), (large, 0.9), (large2, 0.9), *[(s, 0.8) for s in smalls])
    budget = 400
    params = replace(WHOLE, repay_factor=8.0)
    assert 0.9 < params.repay_factor * large.tokens / budget, "the large unit must fail the value-per-token test"

    with_reserve = select_context(query, cands, budget, replace(params, reserve_fraction=0.2))
    without = select_context(query, cands, budget, replace(params, reserve_fraction=0.0))

    assert large.location in by_path(with_reserve)
    assert by_path(with_reserve)[large.location].reserve is True
    assert [p.chunk.location for p in with_reserve.pieces if p.reserve] == [large.location]  # at most one
    assert reasons(with_reserve)[large2.location] == REASON_BUDGET
    assert large.location not in by_path(without)
    assert reasons(without)[large.location] == REASON_BUDGET
    for sel in (with_reserve, without):
        assert sel.spent <= budget


def test_reserve_is_held_back_for_a_unit_the_question_names_even_at_a_low_rank():
    smalls = [func(f"s{i}.py", 1, f"zqsmal{LETTERS[i % 17]}{LETTERS[i // 17]}x", nonsense(LETTERS[i % 17] + LETTERS[i // 17], 4))
              for i in range(60)]
    named = func("named.py", 1, "zqnamedx", nonsense("n", 24))
    unnamed = func("named.py", 1, "zqothrx", nonsense("n", 24))
    budget = 400
    question = "what does zqnamedx do"

    def run(unit, fraction):
        cands = ranked(*[(s, 1.0) for s in smalls[:29]], (unit, 0.9), *[(s, 0.9) for s in smalls[29:]])
        return select_context(question, cands, budget, replace(WHOLE, reserve_fraction=fraction))

    claimed = run(named, 0.2)
    assert by_path(claimed)[named.location].reserve and by_path(claimed)[named.location].rank == 30
    assert claimed.spent <= budget
    # The small pieces ranked above it had only the main share.
    assert sum(p.tokens for p in claimed.pieces if p.rank < 30) <= budget - claimed.reserve_tokens
    assert reasons(run(named, 0.0))[named.location] == REASON_BUDGET
    unclaimed = run(unnamed, 0.2)
    assert reasons(unclaimed)[unnamed.location] == REASON_BUDGET   # low rank, not named: no claim
    # An unclaimed reserve is released to what lost only to the budget.
    assert budget - unclaimed.reserve_tokens < unclaimed.spent <= budget


def test_unit_that_does_not_fit_is_left_out_whole_and_the_walk_goes_on():
    a = func("a.py", 1, "zqalfx", nonsense("a", 14))
    b = func("b.py", 1, "zqbrvx", nonsense("b", 14))
    c = func("c.py", 1, "zqchrx", nonsense("c", 14))
    d = chunk("d.py", 1, "ZQDLTX = 1", symbol="ZQDLTX", kind="constant")
    budget = a.tokens + b.tokens + c.tokens // 2
    params = replace(WHOLE, reserve_fraction=0.0, repay_factor=0.0)
    sel = select_context("zqaaax", ranked((a, 1.0), (b, 1.0), (c, 1.0), (d, 1.0)), budget, params)

    assert [p.chunk.path for p in sel.pieces] == ["a.py", "b.py", "d.py"]
    out = {o.path: o for o in sel.left_out}
    assert out["c.py"].reason == REASON_BUDGET
    assert out["c.py"].tokens == c.tokens
    assert f"needs {c.tokens} tokens" in out["c.py"].detail
    for piece in sel.pieces:   # whole units: nothing is cut to fit
        assert piece.text == piece.chunk.text and not piece.trimmed
    assert not any("zqcaax" in p.text for p in sel.pieces)
    assert sel.spent == sum(estimate_tokens(p.text) for p in sel.pieces) <= budget


def test_unit_larger_than_the_whole_budget():
    huge = func("huge.py", 1, "zqhugx", nonsense("h", 60))
    small = chunk("small.py", 1, "ZQSMLX = 2", symbol="ZQSMLX", kind="constant")
    budget = huge.tokens // 3

    alone = select_context("zqhaax", ranked((huge, 1.0)), budget, WHOLE)
    assert alone.pieces == [] and alone.spent == 0
    assert alone.left_out[0].reason == REASON_BUDGET
    assert alone.weak_evidence and "fits the budget" in alone.weak_reasons[0]
    assert alone.suggested_budget is not None and alone.suggested_budget >= huge.tokens

    with_small = select_context("zqhaax", ranked((huge, 1.0), (small, 0.9)), budget, WHOLE)
    assert [p.chunk.path for p in with_small.pieces] == ["small.py"]
    assert reasons(with_small)[huge.location] == REASON_BUDGET


def test_overlapping_lines_and_near_copies_are_admitted_once():
    words = nonsense("d", 20)
    cls = chunk("m.py", 10, "class zqclsx:\n" + body(words), symbol="zqclsx", kind="class")
    method = chunk("m.py", 12, body(words[4:12]), symbol="zqclsx.part", kind="method")
    copy = chunk("vendor/m.py", 10, cls.text)
    near = chunk("other/m.py", 10, cls.text.replace(words[0], "zqchangx"))
    elsewhere = func("m.py", 40, "zqelsx", nonsense("e", 8))
    sel = select_context("zqdaax", ranked((cls, 1.0), (method, 0.95), (copy, 0.9), (near, 0.9), (elsewhere, 0.8)),
                         2000, WHOLE)

    got = reasons(sel)
    assert got[method.location] == REASON_DUPLICATE
    assert got[copy.location] == REASON_DUPLICATE
    assert got[near.location] == REASON_DUPLICATE
    details = {o.path + str(o.start_line): o.detail for o in sel.left_out}
    assert "overlaps m.py:10-" in details["m.py12"]
    assert "near-copy" in details["other/m.py10"]
    assert [p.chunk.location for p in sel.pieces] == [cls.location, elsewhere.location]


def test_nothing_new_is_left_out_but_the_walk_continues():
    w1, w2 = nonsense("f", 12), nonsense("g", 12)
    first = chunk("n.py", 1, body(w1), kind="code")
    second = chunk("n.py", 20, body(w2), kind="code")
    # Half of each: no near-copy of either, but every word already covered, in a file already seen.
    mix = chunk("n.py", 40, body(w1[:6] + w2[:6]), kind="code")
    fresh = chunk("n.py", 60, body(nonsense("h", 12)), kind="code")
    # Covered words too, but it carries a question term nothing admitted has: that is new information.
    asked = chunk("n.py", 80, body(w1[6:] + ["zqaskx", "zqaskbx"]), kind="code")
    sel = select_context("zqaskx", ranked((first, 1.0), (second, 1.0), (mix, 1.0), (fresh, 1.0), (asked, 1.0)),
                         5000, WHOLE)

    assert reasons(sel) == {mix.location: REASON_NO_NEW_INFORMATION}
    assert {p.chunk.location for p in sel.pieces} == {first.location, second.location, fresh.location, asked.location}
    assert sel.covered_query_terms == ["zqaskx"]


def test_relevance_bar_relative_to_best_and_head_agreement():
    a, b, c, d = (func(f"{n}.py", 1, f"zq{n}x", nonsense(n, 6)) for n in "abcd")
    cands = ranked((a, 10.0), (b, 6.0), (c, 2.0), (d, 2.0))
    cands[3].heads = {"vector": HeadHit(2, 0.5), "bm25": HeadHit(3, 2.0)}   # two heads agree on d
    sel = select_context("zqaaax", cands, 5000, WHOLE)

    assert sel.relevance_bar == pytest.approx(5.0)
    assert reasons(sel) == {c.location: REASON_BELOW_BAR}
    assert sel.above_bar == 3
    assert {p.chunk.path for p in sel.pieces} == {"a.py", "b.py", "d.py"}


def test_score_floor_means_nothing_matched():
    a = func("a.py", 1, "zqax", nonsense("a", 6))
    sel = select_context("zqaaax", ranked((a, 0.0)), 1000, params_for_retriever("bm25", span_tiers=WHOLE.span_tiers))
    assert sel.nothing_matched and sel.pieces == []
    assert reasons(sel) == {a.location: REASON_BELOW_BAR}
    assert select_context("zqaaax", ranked((a, 0.0)), 1000, WHOLE).above_bar == 1  # no floor: relative bar only


def test_weak_evidence_when_best_head_score_is_low():
    a = func("a.py", 1, "zqaax", ["zqaaax", "zqaabx"])
    strong = select_context("zqaaax zqaabx", ranked((a, 0.62)), 1000)
    weak = select_context("zqaaax zqaabx", ranked((a, 0.05)), 1000)
    assert not strong.weak_evidence
    assert weak.weak_evidence and "vector" in weak.weak_reasons[0]
    uncovered = select_context("zqaaax zqbbbx zqcccx zqdddx zqeeex", ranked((a, 0.62)), 1000)
    assert uncovered.weak_evidence and "missing" in uncovered.weak_reasons[-1]


def test_budget_must_be_positive():
    with pytest.raises(UsageError):
        select_context("anything", [], 0)


def test_no_candidates_is_nothing_matched():
    sel = select_context("where is the parser", [], 500)
    assert sel.nothing_matched and sel.pieces == [] and sel.best_score is None


@pytest.mark.parametrize("budget", [20, 60, 150, 400, 1200, 5000])
def test_spent_is_the_sum_of_returned_texts_and_within_budget(budget):
    query = "where does the parser read the config file"
    cands = []
    for i in range(30):
        words = nonsense(LETTERS[i % 17], 6 + 2 * (i % 7))
        text = f"def read_config_{LETTERS[i % 17]}(path):\n    parser = open(path)\n{body(words)}\n    return parser"
        cands.append((chunk(f"pkg/f{i}.py", 1, text, symbol=f"read_config_{i}"), 1.0 - i / 60))
    sel = select_context(query, ranked(*cands), budget)
    assert sel.spent == sum(estimate_tokens(p.text) for p in sel.pieces)
    assert all(p.tokens == estimate_tokens(p.text) for p in sel.pieces)
    assert sel.spent <= budget
    seen = [p.rank for p in sel.pieces] + [o.rank for o in sel.left_out]
    assert sorted(seen) == list(range(1, 31))   # every candidate is accounted for exactly once


# ---------------------------------------------------------------- span selection

FUNCTION = '''def load_settings(path, overrides):
    """Read the settings file."""
    handle = open(path)
    text = handle.read()
    for key, value in overrides.items():
        if key in ALLOWED:
            settings_cache[key] = value
    unrelated_counter = 0
    unrelated_counter += 1
    log_debug(unrelated_counter)
    return text'''


def test_lower_rank_keeps_definition_matching_lines_and_their_blocks():
    terms = set(query_tokens("how are settings overrides cached"))
    params = SelectionParams(span_tiers=((2, 0),), span_min_shared_beyond=1)
    span = select_spans(FUNCTION, 20, terms, params)
    kept = span.text.split("\n")
    assert span.trimmed
    assert kept[0] == "def load_settings(path, overrides):"
    assert "            settings_cache[key] = value" in kept
    assert "    for key, value in overrides.items():" in kept   # enclosing block opener
    assert "        if key in ALLOWED:" in kept
    assert not any("unrelated_counter" in line for line in kept)
    assert not any("handle.read()" in line for line in kept)
    elided = sum(int(n) for n in MARKER_COUNT.findall(span.text))
    assert elided + len(span.kept) == span.lines_total == FUNCTION.count("\n") + 1
    assert any(line.startswith("    ...") for line in kept)   # marker at the indentation it stands for


def test_enclosing_block_lines_are_kept_around_a_deep_match():
    code = ("def handle(request):\n    for item in request.items:\n"
            + "".join(f"        pad_{i} = compute({i})\n" for i in range(4))
            + "        if item.ready:\n"
            + "".join(f"            more_{i} = compute({i})\n" for i in range(4))
            + "            remember_settings(item)")
    span = select_spans(code, 20, set(query_tokens("settings")), SelectionParams(span_min_shared_beyond=1))
    assert span.text.split("\n") == [
        "def handle(request):", "    for item in request.items:", "        ... (4 lines)",
        "        if item.ready:", "            ... (4 lines)", "            remember_settings(item)"]


def test_top_rank_passes_whole():
    terms = set(query_tokens("how are settings overrides cached"))
    span = select_spans(FUNCTION, 1, terms, SelectionParams())
    assert span.text == FUNCTION and not span.trimmed
    assert len(span.kept) == span.lines_total


def test_lower_ranks_require_more_shared_words():
    params = SelectionParams()
    assert [required_shared_terms(r, params) for r in (1, 4, 10, 50)] == sorted(
        required_shared_terms(r, params) for r in (1, 4, 10, 50))
    terms = set(query_tokens("overrides settings"))
    one_word_line = "    for key, value in overrides.items():"   # shares one query word
    tier_one = next(r for r in range(1, 100) if required_shared_terms(r, params) == 1)
    tier_two = next(r for r in range(1, 100) if required_shared_terms(r, params) == 2)
    assert one_word_line in select_spans(FUNCTION, tier_one, terms, params).text.split("\n")
    assert one_word_line not in select_spans(FUNCTION, tier_two, terms, params).text.split("\n")


def test_multiline_signature_and_headings_are_structure():
    code = "def build(\n    source,\n    target,\n):\n" + "\n".join(f"    step_{i} = source + {i}" for i in range(8))
    span = select_spans(code, 30, {"zqnothingx"}, SelectionParams())
    assert span.text.split("\n")[:4] == ["def build(", "    source,", "    target,", "):"]
    prose = "\n".join(["a sentence of ordinary explanatory prose about the project"] * 4)
    doc = f"# Guide\n{prose}\n## Install\nrun pip install in a virtual environment\n{prose}"
    span = select_spans(doc, 30, {"zqnothingx"}, SelectionParams(), kind="section")
    assert "# Guide" in span.text and "## Install" in span.text and "pip" not in span.text


def test_selected_piece_is_charged_for_its_trimmed_text():
    query = "how are settings overrides cached"
    big = chunk("s.py", 1, FUNCTION, symbol="load_settings")
    filler = [(func(f"f{i}.py", 1, f"zqfil{LETTERS[i]}x", nonsense(LETTERS[i], 4)), 1.0) for i in range(9)]
    cands = ranked(*filler, (big, 1.0))   # big is rank 10: trimmed
    sel = select_context(query, cands, 5000, SelectionParams(min_novelty=0.0))
    piece = by_path(sel)[big.location]
    assert piece.trimmed and piece.lines_kept < piece.lines_total
    assert piece.tokens == estimate_tokens(piece.text) < estimate_tokens(FUNCTION)
    assert ELISION_MARKER.split(" ")[0] in piece.text
