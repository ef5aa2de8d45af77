"""The rerank retriever over a tiny random-weight cross-encoder built here (no download, no real model)."""
from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from chunkers.base import CodeChunk
from navigator.core.config import Config
from navigator.core.errors import ModelError, UsageError
from retrievers.base import HeadHit, RetrievedChunk, Retriever
from retrievers.bm25 import NO_TERMS_NOTE
from retrievers.rerank import MAX_QUERY_CHARS, RerankRetriever, load_cross_encoder, passage_text

@pytest.fixture(scope="module")
def tiny_model_dir(tiny_cross_encoder_dir):
    """conftest's tiny random-weight cross-encoder (max length TINY_CROSS_ENCODER_LENGTH word pieces; the
    chunks below are longer, so truncation is exercised)."""
    return tiny_cross_encoder_dir


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def chunk(i: int, symbol: str | None, text: str, header: str = "") -> CodeChunk:
    return CodeChunk(path=f"src/pkg/mod{i}.py", start_line=1, end_line=1 + text.count("\n"), kind="function",
                     text=text, symbol=symbol, header=header)


CHUNKS = [
    chunk(0, "load_config", "def load_config(path):\n    return parse(open(path).read())"),
    chunk(1, "Client.fetch", "def fetch(self, url):\n    return self.http.get(url).response", header="class Client:"),
    chunk(2, "retry", "def retry(fn, n):\n    for _ in range(n):\n        fn()"),
    chunk(3, None, "MAX_RETRIES = 3"),
    chunk(4, "parse_args", "def parse_args(argv):\n    return parser.parse_args(argv)"),
    chunk(5, "write_file", "def write_file(path, data):\n    open(path, 'w').write(data)\n" * 8),  # long
    chunk(6, "read_file", "def read_file(path):\n    return open(path).read()"),
    chunk(7, "setup", "def setup():\n    logging.basicConfig()"),
]


class FakeIndex:
    def chunks(self):
        return CHUNKS

    def chunk_by_id(self, chunk_id):
        return next(c for c in CHUNKS if c.id == chunk_id)


class FixedBase(Retriever):
    """A base retriever with a fixed ranking, recording what it was asked."""

    name = "fixedbase"

    def __init__(self, order=None):
        super().__init__(FakeIndex(), Config())
        self.order = order if order is not None else list(range(len(CHUNKS)))
        self.calls: list[tuple[str, int]] = []
        self.notes = ["fixedbase: a note"]

    def retrieve(self, query, k):
        self.calls.append((query, k))
        return [RetrievedChunk(chunk=CHUNKS[i], score=1.0 / rank, rank=rank,
                               heads={"vector": HeadHit(rank=rank, score=0.9 - rank / 100)})
                for rank, i in enumerate(self.order[:k], start=1)]


def make(tiny_model_dir, base=None, **extra):
    config = Config(rerank_model=str(tiny_model_dir), extra={k: str(v) for k, v in extra.items()})
    return RerankRetriever(FakeIndex(), config, base=base or FixedBase())


def direct_scores(tiny_model_dir, query, chunks, with_context=True):
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(str(tiny_model_dir), local_files_only=True)
    return model.predict([(query, passage_text(c, with_context)) for c in chunks], show_progress_bar=False)


def test_rerank_permutes_the_base_pool_with_the_cross_encoder_scores(tiny_model_dir):
    base = FixedBase(order=[3, 0, 6, 1, 5, 2, 4, 7])
    retriever = make(tiny_model_dir, base=base, NAV_RERANK_POOL=6)
    query = "where is the config file read"
    results = retriever.retrieve(query, 6)
    assert base.calls == [(query, 6)]
    pool = [CHUNKS[i] for i in base.order[:6]]
    assert sorted(r.chunk.id for r in results) == sorted(c.id for c in pool)
    expected = dict(zip((c.id for c in pool), direct_scores(tiny_model_dir, query, pool)))
    assert [r.chunk.id for r in results] != [c.id for c in pool]          # the cross-encoder reordered the pool
    assert [r.score for r in results] == pytest.approx([expected[r.chunk.id] for r in results], abs=1e-5)
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)
    base_rank = {CHUNKS[i].id: rank for rank, i in enumerate(base.order, start=1)}
    for rank, r in enumerate(results, start=1):
        assert r.rank == rank and r.heads["rerank"] == HeadHit(rank=rank, score=r.score)
        assert r.heads["fixedbase"].rank == base_rank[r.chunk.id]
        assert r.heads["vector"].rank == base_rank[r.chunk.id]      # the base's own heads are carried along


def test_rerank_returns_the_best_k_of_the_pool(tiny_model_dir):
    base = FixedBase()
    query = "retry the http response"
    top3 = make(tiny_model_dir, base=base, NAV_RERANK_POOL=8).retrieve(query, 3)
    scores = direct_scores(tiny_model_dir, query, CHUNKS)
    best = [CHUNKS[i].id for i in np.argsort(-scores, kind="stable")[:3]]
    assert [r.chunk.id for r in top3] == best


def test_rerank_scores_at_least_k_candidates(tiny_model_dir):
    base = FixedBase()
    results = make(tiny_model_dir, base=base, NAV_RERANK_POOL=2).retrieve("parse args", 5)
    assert base.calls[-1][1] == 5 and len(results) == 5
    assert all("rerank" in r.heads for r in results)


def test_context_toggle_changes_what_the_cross_encoder_reads(tiny_model_dir):
    c = CHUNKS[1]
    assert passage_text(c, True) == "src/pkg/mod1.py · Client.fetch\nclass Client:\n" + c.text
    assert passage_text(CHUNKS[3], True) == "src/pkg/mod3.py\nMAX_RETRIES = 3"
    assert passage_text(c, False) == c.text
    query = "http fetch"
    with_ctx = make(tiny_model_dir, NAV_RERANK_CONTEXT=1).retrieve(query, 8)
    without = make(tiny_model_dir, NAV_RERANK_CONTEXT=0).retrieve(query, 8)
    plain = dict(zip((c.id for c in CHUNKS), direct_scores(tiny_model_dir, query, CHUNKS, with_context=False)))
    assert {r.chunk.id: r.score for r in without} == pytest.approx(plain, abs=1e-5)
    assert {r.chunk.id: r.score for r in with_ctx} != pytest.approx(plain, abs=1e-5)


def test_model_is_loaded_once_per_process(tiny_model_dir):
    assert load_cross_encoder(str(tiny_model_dir)) is load_cross_encoder(str(tiny_model_dir))


def test_a_chinese_question_reaches_the_cross_encoder_with_the_glossary_english(tiny_model_dir):
    from retrievers.crosslingual import expand_query

    base = FixedBase()
    query = "在哪里读取配置文件"
    expanded = expand_query(query)
    assert "config file" in expanded and expanded.startswith(query)
    results = make(tiny_model_dir, base=base, NAV_RERANK_POOL=8).retrieve(query, 8)
    assert base.calls == [(query, 8)]                  # the base gets the question as asked
    expected = dict(zip((c.id for c in CHUNKS), direct_scores(tiny_model_dir, expanded, CHUNKS)))
    assert [r.score for r in results] == pytest.approx([expected[r.chunk.id] for r in results], abs=1e-5)
    raw = dict(zip((c.id for c in CHUNKS), direct_scores(tiny_model_dir, query, CHUNKS)))
    assert [r.score for r in results] != pytest.approx([raw[r.chunk.id] for r in results], abs=1e-5)


def test_long_query_is_cut_for_the_cross_encoder_with_a_note(tiny_model_dir):
    base = FixedBase()
    retriever = make(tiny_model_dir, base=base)
    query = "config file " * 2000
    results = retriever.retrieve(query, 4)
    assert base.calls[-1][0] == query                 # the base still gets the whole text
    assert len(results) == 4
    assert any(f"first {MAX_QUERY_CHARS}" in n for n in retriever.notes)
    assert "fixedbase: a note" in retriever.notes


def test_empty_query_returns_nothing_without_asking_the_base(tiny_model_dir):
    base = FixedBase()
    retriever = make(tiny_model_dir, base=base)
    assert retriever.retrieve("   ", 5) == []
    assert base.calls == [] and NO_TERMS_NOTE in retriever.notes


def test_missing_hub_model_fails_fast_with_advice():
    config = Config(rerank_model="nav-tests/no-such-cross-encoder")
    retriever = RerankRetriever(FakeIndex(), config, base=FixedBase())
    with pytest.raises(ModelError) as info:
        retriever.retrieve("config", 3)
    assert "nav-tests/no-such-cross-encoder" in info.value.message
    assert "download nav-tests/no-such-cross-encoder" in info.value.hint
    assert "NAV_RERANK_MODEL" in info.value.hint


def test_missing_or_empty_model_directory_is_a_model_error(tmp_path):
    with pytest.raises(ModelError) as info:
        load_cross_encoder(str(tmp_path / "absent"))
    assert "absent" in info.value.message and "NAV_RERANK_MODEL" in info.value.hint
    with pytest.raises(ModelError):
        load_cross_encoder(str(tmp_path))            # exists, holds no model


def test_default_base_comes_from_the_registry(tiny_model_dir, monkeypatch):
    calls = []
    base = FixedBase()

    def get_retriever(name, index, config):
        calls.append((name, index, config))
        return base

    monkeypatch.setitem(sys.modules, "retrievers.registry", types.SimpleNamespace(get_retriever=get_retriever))
    config = Config(rerank_model=str(tiny_model_dir), extra={"NAV_RERANK_BASE": "bm25"})
    index = FakeIndex()
    results = RerankRetriever(index, config).retrieve("config", 2)
    assert calls == [("bm25", index, config)] and len(results) == 2
    config = Config(rerank_model=str(tiny_model_dir))
    RerankRetriever(index, config).retrieve("config", 2)
    assert calls[-1][0] == "graph"      # the default retriever's ranking is what rerank re-scores


@pytest.mark.parametrize("extra, fragment", [
    ({"NAV_RERANK_POOL": "0"}, "NAV_RERANK_POOL"), ({"NAV_RERANK_POOL": "ten"}, "NAV_RERANK_POOL"),
    ({"NAV_RERANK_BASE": "rerank"}, "rerank its own output"), ({"NAV_RERANK_CONTEXT": "maybe"}, "0 or 1"),
])
def test_bad_settings_are_usage_errors(extra, fragment):
    with pytest.raises(UsageError) as info:
        RerankRetriever(FakeIndex(), Config(extra=extra), base=FixedBase())
    assert fragment in info.value.message and info.value.hint
