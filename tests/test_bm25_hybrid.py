"""BM25 scoring (against rank_bm25 as the oracle), the bm25 retriever, RRF fusion math, the hybrid retriever."""
from __future__ import annotations

import os
import random
from collections import Counter

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from chunkers.base import CodeChunk
from navigator.core.config import Config
from navigator.core.errors import UsageError
from retrievers.bm25 import (
    MAX_QUERY_TERMS, NO_TERMS_NOTE, BM25Retriever, BM25Scorer, saturated_query_weights,
)
from retrievers.fusion import default_candidate_depth, reciprocal_rank_fusion
from retrievers.hybrid import HybridRetriever, HybridSettings, parse_head_weights
from navigator.index.tokenize import USER_ABBREVIATIONS_ENV, document_tokens, tokenizer_version
from retrievers.query_terms import query_tokens


@pytest.fixture(autouse=True)
def no_user_abbreviations(monkeypatch):
    monkeypatch.delenv(USER_ABBREVIATIONS_ENV, raising=False)


def chunk(path: str, symbol: str, text: str, kind: str = "function", start: int = 1, header: str = "") -> CodeChunk:
    return CodeChunk(path=path, start_line=start, end_line=start + text.count("\n"), kind=kind, text=text,
                     symbol=symbol, header=header)


CORPUS = [
    chunk("src/app/config.py", "load_config",
          'def load_config(path):\n    """Read the configuration file."""\n    with open(path) as fh:\n'
          '        data = json.load(fh)\n    return Config(max_retries=data.get("max_retries", 3))'),
    chunk("src/app/http.py", "Client.getHTTPResponse",
          "def getHTTPResponse(self, url, timeout=10):\n    resp = self.session.get(url, timeout=timeout)\n"
          "    resp.raise_for_status()\n    return resp", kind="method", start=20, header="class Client:"),
    chunk("src/app/tools.py", "FILE_TOOLS", 'FILE_TOOLS = ["read_file", "write_file", "list_dir"]', kind="constant"),
    chunk("src/app/digest.py", "file_sha256",
          'def file_sha256(path):\n    h = hashlib.sha256()\n    with open(path, "rb") as fh:\n'
          "        for block in iter(lambda: fh.read(65536), b''):\n            h.update(block)\n"
          "    return h.hexdigest()"),
    chunk("src/app/cli.py", "parse_args",
          "def parse_args(argv):\n    parser = argparse.ArgumentParser()\n"
          '    parser.add_argument("--max-retries", type=int, default=3)\n    return parser.parse_args(argv)'),
    chunk("src/app/retry.py", "retry",
          "def retry(fn, attempts):\n    for attempt in range(attempts):\n        try:\n            return fn()\n"
          "        except TimeoutError as err:\n            last = err\n    raise last"),
    chunk("src/app/env.py", "app_environment",
          'def app_environment():\n    return os.environ.get("APP_ENV", "development")'),
    chunk("docs/zh.md", None, "## 配置\n读取配置文件 config.json，然后设置最大重试次数。", kind="section"),
    chunk("src/app/log.py", "setup_logging",
          "def setup_logging(level):\n    logging.basicConfig(level=level)\n    return logging.getLogger(__name__)"),
    chunk("src/app/db.py", "connect",
          "def connect(url):\n    engine = create_engine(url)\n    return engine.connect()"),
]


class FakeIndex:
    """The NavIndex surface the retrievers use, over real CodeChunks, with a vector head we control."""

    def __init__(self, chunks, vector_order=None, stored_tokens=True):
        self._chunks = list(chunks)
        self._by_id = {c.id: c for c in self._chunks}
        self.vector_order = list(vector_order) if vector_order is not None else [c.id for c in self._chunks]
        self.vector_calls: list[tuple[str, int]] = []
        self.bm25_token_calls = 0
        if stored_tokens is True:
            self._stored = {c.id: document_tokens(c.embed_text) for c in self._chunks}
        else:
            self._stored = stored_tokens or None
        self.tokenizer_version = tokenizer_version() if self._stored is not None else "code-tokens-0.old"
        self.manifest = {"chunk_count": len(self._chunks)}

    def chunks(self):
        return self._chunks

    def chunk_by_id(self, chunk_id):
        return self._by_id[chunk_id]

    def chunk_paths(self):
        return {c.id: c.path for c in self._chunks}

    def bm25_tokens(self):
        self.bm25_token_calls += 1
        return self._stored

    def vector_search(self, query, k):
        self.vector_calls.append((query, k))
        n = len(self.vector_order)
        return [(cid, 1.0 - i / (n + 1)) for i, cid in enumerate(self.vector_order[:k])]


def ids(results):
    return [r.chunk.id for r in results]


# ---------------------------------------------------------------- BM25 scoring vs the rank_bm25 oracle

def oracle_top(okapi: BM25Okapi, token_lists, query: list[str], k: int) -> list[tuple[int, float]]:
    scores = okapi.get_scores(query)
    qset = set(query)
    matching = [i for i, toks in enumerate(token_lists) if qset & set(toks)]
    matching.sort(key=lambda i: (-scores[i], i))
    return [(i, float(scores[i])) for i in matching[:k]]


@pytest.mark.parametrize("query", [
    "where is the maximum number of retries configured",
    "getHTTPResponse timeout",
    "sha256 of a file file file",          # a repeated term: scores add up per occurrence, as in rank_bm25
    "读取配置",
    "def return path",                       # terms in more than half the chunks: idf floored by epsilon
    "no_such_term_anywhere",
])
def test_scores_match_rank_bm25_on_code_tokens(query):
    token_lists = [document_tokens(c.embed_text) for c in CORPUS]
    q = query_tokens(query)
    expected = BM25Okapi(token_lists).get_scores(q)
    got = BM25Scorer(token_lists).scores(Counter(q))
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


def test_scores_match_rank_bm25_on_random_corpora_with_common_terms():
    rng = random.Random(7)
    vocab = [f"w{i}" for i in range(12)]   # a tiny vocabulary: many terms sit in over half the documents
    for _ in range(5):
        token_lists = [[rng.choice(vocab) for _ in range(rng.randint(0, 30))] for _ in range(60)]
        okapi = BM25Okapi(token_lists)
        scorer = BM25Scorer(token_lists)
        for _ in range(10):
            q = [rng.choice(vocab + ["unknown"]) for _ in range(rng.randint(1, 6))]
            np.testing.assert_allclose(scorer.scores(Counter(q)), okapi.get_scores(q), rtol=1e-10, atol=1e-12)


def test_top_matches_the_oracle_ranking_and_keeps_corpus_order_on_ties():
    token_lists = [["a", "b"], ["c"], ["a", "b"], ["b", "d", "d"], ["a", "b"]]
    scorer = BM25Scorer(token_lists)
    okapi = BM25Okapi(token_lists)
    got, expected = scorer.top({"a": 1.0}, 10), oracle_top(okapi, token_lists, ["a"], 10)
    assert [d for d, _ in got] == [d for d, _ in expected] == [0, 2, 4]
    assert [s for _, s in got] == pytest.approx([s for _, s in expected])
    assert [doc for doc, _ in scorer.top({"a": 1.0}, 2)] == [0, 2]       # three equal scores, cut at two
    assert [doc for doc, _ in scorer.top({"b": 1.0, "d": 1.0}, 10)][0] == 3
    assert scorer.top({"zzz": 1.0}, 5) == []


def test_empty_corpus_scores_nothing():
    scorer = BM25Scorer([])
    assert scorer.top({"a": 1.0}, 5) == []
    assert len(scorer.scores({"a": 1.0})) == 0


def test_query_term_frequency_saturates():
    weights = saturated_query_weights(["a", "a", "b"], k3=7.0)
    assert weights == pytest.approx({"a": 8 * 2 / 9, "b": 1.0})
    assert list(weights) == ["a", "b"]


# ---------------------------------------------------------------- the bm25 retriever

@pytest.mark.parametrize("query", ["maximum number of retries", "getHTTPResponse timeout", "file sha256 digest"])
def test_bm25_retriever_ranks_like_the_oracle(query):
    index = FakeIndex(CORPUS)
    results = BM25Retriever(index, Config()).retrieve(query, 5)
    token_lists = [document_tokens(c.embed_text) for c in CORPUS]
    expected = oracle_top(BM25Okapi(token_lists), token_lists, query_tokens(query), 5)
    assert ids(results) == [CORPUS[i].id for i, _ in expected]
    assert [r.score for r in results] == pytest.approx([s for _, s in expected])
    for rank, r in enumerate(results, start=1):
        assert r.rank == rank
        assert set(r.heads) == {"bm25"} and r.heads["bm25"].rank == rank
        assert r.heads["bm25"].score == pytest.approx(r.score)


def test_bm25_finds_identifiers_through_their_parts_and_abbreviations():
    retriever = BM25Retriever(FakeIndex(CORPUS), Config())
    assert retriever.retrieve("http response", 1)[0].chunk.symbol == "Client.getHTTPResponse"
    assert retriever.retrieve("file tools", 1)[0].chunk.symbol == "FILE_TOOLS"
    assert retriever.retrieve("environment variable", 1)[0].chunk.symbol == "app_environment"   # os.environ
    assert retriever.retrieve("读取配置", 1)[0].chunk.path == "docs/zh.md"


def test_bm25_uses_the_stored_token_lists_and_builds_once():
    stored = {c.id: document_tokens(c.embed_text) for c in CORPUS}
    stored[CORPUS[8].id] = stored[CORPUS[8].id] + ["zzstoredonly"]
    index = FakeIndex(CORPUS, stored_tokens=stored)
    retriever = BM25Retriever(index, Config())
    assert ids(retriever.retrieve("zzstoredonly", 3)) == [CORPUS[8].id]
    retriever.retrieve("config", 3)
    assert index.bm25_token_calls == 1
    assert retriever.notes == []
    assert retriever.build_seconds is not None


def test_bm25_recomputes_missing_token_lists_and_says_so():
    index = FakeIndex(CORPUS, stored_tokens=None)
    retriever = BM25Retriever(index, Config())
    results = retriever.retrieve("http response", 2)
    assert results[0].chunk.symbol == "Client.getHTTPResponse"
    assert any("recomputed in memory" in note and "code-tokens-0.old" in note for note in retriever.notes)


@pytest.mark.parametrize("query", ["", "   \n", "the of and is", "?!"])
def test_queries_without_searchable_terms_return_nothing_with_a_note(query):
    retriever = BM25Retriever(FakeIndex(CORPUS), Config())
    assert retriever.retrieve(query, 5) == []
    assert retriever.notes == [NO_TERMS_NOTE]


def test_query_terms_absent_from_the_index_return_nothing_with_a_note():
    retriever = BM25Retriever(FakeIndex(CORPUS), Config())
    assert retriever.retrieve("kubernetes helm chart", 5) == []
    assert any("none of the query terms" in n for n in retriever.notes)
    assert retriever.retrieve("config", 5)          # notes are per query
    assert retriever.notes == []


def long_bug_report(n_chars: int = 20_000) -> str:
    lines = ['Traceback (most recent call last):', '  File "src/app/http.py", line 22, in getHTTPResponse',
             "TimeoutError: read timed out after 10 seconds"]
    i = 0
    while sum(len(line) + 1 for line in lines) < n_chars:
        lines.append(f"  File \"site-packages/lib{i}/mod{i}.py\", line {i}, in handler_{i}: value_{i} = call_{i}()")
        i += 1
    return "\n".join(lines)[:n_chars]


def test_long_query_keeps_the_full_text_but_caps_distinct_terms():
    extra = [chunk(f"vendor/lib{i}/mod{i}.py", f"handler_{i}", f"def handler_{i}():\n    value_{i} = call_{i}()")
             for i in range(200)]
    index = FakeIndex(CORPUS + extra)
    retriever = BM25Retriever(index, Config())
    query = long_bug_report()
    assert len(query) == 20_000
    weights = retriever.query_weights(query)
    assert len(weights) == MAX_QUERY_TERMS
    # the note counts the distinct terms of the whole 20,000 characters: nothing was truncated
    distinct = len(set(query_tokens(query)))
    assert distinct > 2 * MAX_QUERY_TERMS
    assert any(f"has {distinct} distinct terms" in n and f"scored the {MAX_QUERY_TERMS}" in n for n in retriever.notes)
    results = retriever.retrieve(query, 10)
    assert len(results) == 10
    assert retriever.notes and all(r.heads["bm25"].rank == r.rank for r in results)


# ---------------------------------------------------------------- fusion math

def test_rrf_hand_computed():
    fused = reciprocal_rank_fusion({"vector": ["a", "b", "c"], "bm25": ["c", "a", "d"]})
    expected = {"a": 1 / 61 + 1 / 62, "b": 1 / 62, "c": 1 / 63 + 1 / 61, "d": 1 / 63}
    assert [d for d, _ in fused] == ["a", "c", "b", "d"]
    assert dict(fused) == pytest.approx(expected)


def test_rrf_weights_and_constant():
    fused = reciprocal_rank_fusion({"vector": ["a", "b"], "bm25": ["b", "c"]}, {"vector": 2.0, "bm25": 0.5}, rrf_k=0)
    assert dict(fused) == pytest.approx({"a": 2.0, "b": 2.0 / 2 + 0.5 / 1, "c": 0.5 / 2})
    assert [d for d, _ in fused] == ["a", "b", "c"]


def test_rrf_zero_weight_drops_a_head_and_duplicates_count_once():
    assert [d for d, _ in reciprocal_rank_fusion({"vector": ["a"], "bm25": ["z"]}, {"bm25": 0})] == ["a"]
    fused = dict(reciprocal_rank_fusion({"vector": ["a", "a", "b"]}))
    assert fused == pytest.approx({"a": 1 / 61, "b": 1 / 63})


def test_rrf_ties_are_deterministic():
    # equal scores and equal best ranks: the head listed first wins
    assert [d for d, _ in reciprocal_rank_fusion({"vector": ["x"], "bm25": ["y"]})] == ["x", "y"]
    assert [d for d, _ in reciprocal_rank_fusion({"bm25": ["y"], "vector": ["x"]})] == ["y", "x"]


def test_rrf_rejects_negative_settings():
    with pytest.raises(ValueError):
        reciprocal_rank_fusion({"vector": ["a"]}, rrf_k=-1)
    with pytest.raises(ValueError):
        reciprocal_rank_fusion({"vector": ["a"]}, {"vector": -1})


@pytest.mark.parametrize("n_chunks, depth", [(0, 20), (150, 20), (250, 25), (1500, 150), (2000, 200), (50_000, 200)])
def test_default_candidate_depth_scales_with_the_corpus(n_chunks, depth):
    assert default_candidate_depth(n_chunks) == depth


# ---------------------------------------------------------------- hybrid settings

def test_parse_head_weights():
    assert parse_head_weights("vector=2, bm25=0.5") == {"vector": 2.0, "bm25": 0.5, "multilingual": 1.0}
    assert parse_head_weights("bm25=0") == {"vector": 1.0, "bm25": 0.0, "multilingual": 1.0}
    assert parse_head_weights("") == {"vector": 1.0, "bm25": 1.0, "multilingual": 1.0}
    assert parse_head_weights("multilingual=0.5")["multilingual"] == 0.5


@pytest.mark.parametrize("text, fragment", [
    ("vectr=1", "unknown head 'vectr'"), ("vector=x", "not a number"), ("vector", "not head=weight"),
    ("vector=0,bm25=0,multilingual=0", "every head has weight 0"), ("bm25=-1", ">= 0"), ("bm25=nan", ">= 0"),
])
def test_parse_head_weights_errors(text, fragment):
    with pytest.raises(UsageError) as info:
        parse_head_weights(text)
    assert fragment in info.value.message and info.value.hint


def test_hybrid_settings_from_environment():
    s = HybridSettings.from_extra({"NAV_RRF_K": "10", "NAV_HYBRID_DEPTH": "7", "NAV_HYBRID_WEIGHTS": "bm25=2"})
    assert (s.rrf_k, s.depth, s.weights) == (10.0, 7, {"vector": 1.0, "bm25": 2.0, "multilingual": 1.0})
    assert s.depth_for(n_chunks=10_000, k=3) == 7 and s.depth_for(n_chunks=10_000, k=9) == 9
    default = HybridSettings.from_extra({})
    assert default.depth_for(n_chunks=1500, k=10) == 150 and default.rrf_k == 60
    for bad in ({"NAV_RRF_K": "-1"}, {"NAV_RRF_K": "abc"}, {"NAV_HYBRID_DEPTH": "0"}, {"NAV_HYBRID_DEPTH": "2.5"}):
        with pytest.raises(UsageError):
            HybridSettings.from_extra(bad)


# ---------------------------------------------------------------- the hybrid retriever

def test_hybrid_fuses_both_heads_and_fills_their_hits():
    vector_order = [CORPUS[i].id for i in (6, 0, 4, 9, 2, 1, 3, 5, 7, 8)]
    index = FakeIndex(CORPUS, vector_order=vector_order)
    query = "maximum number of retries"
    # equal weights, and the tests/docs prior off: this test is about the fusion's arithmetic
    results = HybridRetriever(index, Config(extra={"NAV_PROSE_BM25": "1", "NAV_SOURCE_PRIOR": "1"})).retrieve(query, 10)
    bm25 = BM25Retriever(FakeIndex(CORPUS), Config()).retrieve(query, 20)
    bm25_rank = {r.chunk.id: (r.rank, r.score) for r in bm25}
    vector_rank = {cid: rank for rank, cid in enumerate(vector_order, start=1)}
    expected = {cid: 1 / (60 + vector_rank[cid]) + (1 / (60 + bm25_rank[cid][0]) if cid in bm25_rank else 0.0)
                for cid in vector_order}
    assert [r.score for r in results] == pytest.approx(sorted(expected.values(), reverse=True))
    assert {r.chunk.id: r.score for r in results} == pytest.approx(expected)
    assert 0 < len(bm25_rank) < len(CORPUS)          # some chunks have no bm25 hit, so that head is absent
    for rank, r in enumerate(results, start=1):
        assert r.rank == rank
        assert r.heads["vector"].rank == vector_rank[r.chunk.id]
        assert r.heads["vector"].score == pytest.approx(1.0 - (vector_rank[r.chunk.id] - 1) / 11)
        if r.chunk.id in bm25_rank:
            assert (r.heads["bm25"].rank, r.heads["bm25"].score) == pytest.approx(bm25_rank[r.chunk.id])
        else:
            assert "bm25" not in r.heads
    assert results[0].chunk.id in bm25_rank     # agreement of both heads beats a vector-only first place
    # With the default prior (patches/0015) the doc chunk's fused score counts half; the others keep theirs.
    hybrid = HybridRetriever(index, Config(extra={"NAV_PROSE_BM25": "1"}))
    with_prior = hybrid.retrieve(query, 10)
    # and the result says so, since an agent cannot see what was pushed down
    assert any(n.startswith("source prior: 1 of the 10 best candidates are tests, docs") for n in hybrid.notes), hybrid.notes
    hybrid.retrieve(query + " in the docs", 10)
    assert not any(n.startswith("source prior") for n in hybrid.notes)
    for r in with_prior:
        assert r.score == pytest.approx(expected[r.chunk.id] * (0.5 if r.chunk.path.startswith("docs/") else 1.0))
    assert [r.score for r in with_prior] == sorted((r.score for r in with_prior), reverse=True)
    assert any(r.chunk.path.startswith("docs/") for r in with_prior)


@pytest.mark.parametrize("query, prose", [
    ("maximum number of retries", True),
    ("how many blanks separate the option names from their descriptions", True),
    ("where is max_retries read", False),            # snake_case: names code
    ("what does HttpClient.send raise", False),      # dotted name
    ("the loop in src/app/retry.py", False),         # a path
    ("重试的最大次数是多少", False),                   # CJK: equal weights (English-only embedder)
])
def test_prose_questions_scale_bm25_down_and_code_questions_keep_equal_weights(query, prose):
    vector_order = [CORPUS[i].id for i in (6, 0, 4, 9, 2, 1, 3, 5, 7, 8)]
    settings = HybridSettings.from_extra({})
    assert settings.prose_bm25 == 0.25
    assert settings.weights_for(query)["bm25"] == (0.25 if prose else 1.0)
    assert settings.weights_for(query)["vector"] == 1.0
    assert HybridSettings.from_extra({"NAV_PROSE_BM25": "1"}).weights_for(query)["bm25"] == 1.0
    # the fused scores follow those weights
    results = HybridRetriever(FakeIndex(CORPUS, vector_order=vector_order),
                              Config(extra={"NAV_SOURCE_PRIOR": "1"})).retrieve(query, 10)   # the fusion alone
    bm25_weight = 0.25 if prose else 1.0
    for r in results:
        expected = sum(w / (60 + r.heads[h].rank) for h, w in (("vector", 1.0), ("bm25", bm25_weight)) if h in r.heads)
        assert r.score == pytest.approx(expected)


def test_prose_factor_from_environment_and_its_errors():
    assert HybridSettings.from_extra({"NAV_PROSE_BM25": "0.5"}).weights_for("how long is the delay")["bm25"] == 0.5
    assert HybridSettings.from_extra({"NAV_PROSE_BM25": "0.5", "NAV_HYBRID_WEIGHTS": "bm25=2"}).weights_for(
        "how long is the delay")["bm25"] == 1.0
    for bad in ("-0.1", "1.5", "abc", "nan"):
        with pytest.raises(UsageError) as info:
            HybridSettings.from_extra({"NAV_PROSE_BM25": bad})
        assert "NAV_PROSE_BM25" in info.value.message and info.value.hint


def test_hybrid_candidate_depth_follows_settings_and_k():
    index = FakeIndex(CORPUS)
    HybridRetriever(index, Config()).retrieve("config", 5)
    assert index.vector_calls[-1][1] == 20                                # clamp(round(0.1 * 10), 20, 200)
    HybridRetriever(index, Config(extra={"NAV_HYBRID_DEPTH": "3"})).retrieve("config", 5)
    assert index.vector_calls[-1][1] == 5                                 # never fewer than k
    results = HybridRetriever(index, Config(extra={"NAV_HYBRID_DEPTH": "2"})).retrieve("config", 2)
    assert all(r.heads.get("vector", r.heads.get("bm25")).rank <= 2 for r in results)


def test_hybrid_head_weighted_zero_is_not_searched():
    index = FakeIndex(CORPUS)
    results = HybridRetriever(index, Config(extra={"NAV_HYBRID_WEIGHTS": "vector=0"})).retrieve("http response", 3)
    assert index.vector_calls == []
    assert results and all(set(r.heads) == {"bm25"} for r in results)


def test_hybrid_stopword_query_falls_back_to_the_vector_head_with_a_note():
    index = FakeIndex(CORPUS)
    retriever = HybridRetriever(index, Config())
    results = retriever.retrieve("what is the", 3)
    assert ids(results) == index.vector_order[:3]
    assert all(set(r.heads) == {"vector"} for r in results)
    assert any(NO_TERMS_NOTE in n and "vector head alone" in n for n in retriever.notes)


def test_hybrid_empty_query_returns_nothing_and_searches_nothing():
    index = FakeIndex(CORPUS)
    retriever = HybridRetriever(index, Config())
    assert retriever.retrieve("  ", 5) == []
    assert retriever.notes == [NO_TERMS_NOTE] and index.vector_calls == []


def test_hybrid_passes_the_full_long_query_to_both_heads():
    index = FakeIndex(CORPUS)
    retriever = HybridRetriever(index, Config())
    query = long_bug_report()
    results = retriever.retrieve(query, 5)
    # the vector head reads the report's opening and its densest passages, each under the embedder's limit
    windows = [text for text, _ in index.vector_calls]
    assert 2 <= len(windows) <= 3 and windows[0].startswith("Traceback (most recent call last):")
    assert all(len(w.split()) <= 120 for w in windows)
    assert any("vector: query of 20000 characters embedded as" in n for n in retriever.notes)
    assert len(results) == 5
    http = next(r for r in results if r.chunk.symbol == "Client.getHTTPResponse")
    assert http.heads["bm25"].rank == 1 and http.heads["vector"].rank == 2


# ---------------------------------------------------------------- opt-in latency measurement

BENCH_ENV = "NAV_BM25_BENCH"
BENCH_CHUNKS = 20_000
BENCH_WINDOW_LINES = 40
BENCH_BUILD_BUDGET_S = 2.0        # generous: the figure printed is what matters; this catches regressions
BENCH_QUERY_BUDGET_S = 0.1


@pytest.mark.skipif(not os.environ.get(BENCH_ENV), reason=f"set {BENCH_ENV}=1 to measure BM25 on 20k chunks")
def test_benchmark_bm25_on_20k_chunks(capsys):
    """20,000 chunks = 40-line windows of this Python's standard library; the token lists go through JSON
    as NavIndex.bm25_tokens delivers them. Run: NAV_BM25_BENCH=1 python -m pytest tests/test_bm25_hybrid.py
    -k benchmark -s"""
    import json
    import statistics
    import sysconfig
    import time
    from pathlib import Path

    chunks = []
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).rglob("*.py")):
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (UnicodeDecodeError, OSError):
            continue
        for start in range(0, len(lines), BENCH_WINDOW_LINES):
            text = "\n".join(lines[start:start + BENCH_WINDOW_LINES])
            if text.strip():
                chunks.append(chunk(str(path), None, text, kind="code", start=start + 1))
        if len(chunks) >= BENCH_CHUNKS:
            break
    chunks = chunks[:BENCH_CHUNKS]
    started = time.perf_counter()
    stored = {c.id: json.dumps(document_tokens(c.embed_text)) for c in chunks}
    tokenize_s = time.perf_counter() - started

    class JsonIndex(FakeIndex):
        def bm25_tokens(self):
            return {cid: json.loads(text) for cid, text in stored.items()}

    retriever = BM25Retriever(JsonIndex(chunks, stored_tokens={}), Config())
    started = time.perf_counter()
    assert retriever.retrieve("parse command line arguments", 10)
    first_query_s = time.perf_counter() - started
    short = ["maximum number of retries", "parse command line arguments", "getHTTPResponse timeout error",
             "json encoder datetime", "read file contents utf8", "thread pool executor shutdown",
             "sha256 digest of a file", "context manager that changes directory", "environment variable config",
             "compile regex pattern"]
    timings = {"short": [], "20k": []}
    long_query = "\n".join(c.text for c in chunks[::997])[:20_000]
    for _ in range(5):
        for label, queries in (("short", short), ("20k", [long_query])):
            for q in queries:
                started = time.perf_counter()
                retriever.retrieve(q, 10)
                timings[label].append(time.perf_counter() - started)
    n_tokens = sum(len(json.loads(t)) for t in stored.values())
    with capsys.disabled():
        print(f"\nBM25 benchmark: {len(chunks)} chunks, {n_tokens} tokens ({n_tokens / len(chunks):.0f}/chunk), "
              f"vocabulary {len(retriever.scorer().vocab)}\n"
              f"  document_tokens over all chunks (index time): {tokenize_s:.2f} s\n"
              f"  first query (json.loads of stored lists + build): {first_query_s:.2f} s, "
              f"of which scorer build {retriever.build_seconds:.2f} s\n"
              f"  short query: median {statistics.median(timings['short']) * 1000:.1f} ms, "
              f"max {max(timings['short']) * 1000:.1f} ms\n"
              f"  20,000-char query: median {statistics.median(timings['20k']) * 1000:.1f} ms "
              f"({retriever.notes[-1] if retriever.notes else 'no cap'})")
    assert retriever.build_seconds < BENCH_BUILD_BUDGET_S
    assert statistics.median(timings["short"]) < BENCH_QUERY_BUDGET_S
