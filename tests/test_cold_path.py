"""The cold query path: BM25 postings persisted per index generation (written, loaded, identical scores to
the in-memory build, stale -> rebuilt with a note, incremental after edits and deletes), chunks loaded by id,
and the vector store kept in step by the changes of each run."""
from __future__ import annotations

import json
import random
import sqlite3
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from navigator.index import store
from navigator.core.config import Config
from navigator.index.nav_index import NavIndex
from navigator.index.indexer import build_index
from navigator.index.lexical import BM25Postings, TermEncoder, TermTable
from retrievers.bm25 import BM25Retriever, BM25Scorer
from retrievers.hybrid import HybridRetriever
from navigator.index.tokenize import USER_ABBREVIATIONS_ENV, tokenizer_version
from retrievers.query_terms import query_tokens
from tests.repo_factory import make_repo, write

QUERIES = ["compute a scaled value", "Worker runs jobs", "maximum retries timeout seconds", "visible", "def return"]


@pytest.fixture(autouse=True)
def no_user_abbreviations(monkeypatch):
    monkeypatch.delenv(USER_ABBREVIATIONS_ENV, raising=False)


def index_repo(root: Path):
    return build_index(root.resolve(), Config.from_env())


def bm25_dirs(root: Path) -> list[str]:
    return sorted(p.name for p in (root / ".nav" / store.BM25_DIR).iterdir())


def in_memory_scorer(index: NavIndex) -> BM25Scorer:
    """The statistics as the retriever builds them without a persisted state: stored token lists in
    NavIndex.chunks() order."""
    stored = index.bm25_tokens()
    return BM25Scorer([stored[c.id] for c in index.chunks()])


def assert_same_scoring(index: NavIndex, postings: BM25Postings, queries=QUERIES) -> None:
    assert [postings.chunk_id(i) for i in range(postings.n_docs)] == [c.id for c in index.chunks()]
    persisted, memory = BM25Scorer.from_postings(postings), in_memory_scorer(index)
    assert sorted(persisted.vocab) == sorted(memory.vocab)
    for query in queries:
        weights = Counter(query_tokens(query))
        assert np.array_equal(persisted.scores(weights), memory.scores(weights)), query   # bit-identical
        assert persisted.top(weights, 10) == memory.top(weights, 10)


# ---------------------------------------------------------------- the term table and postings on their own

def test_term_table_lookups_and_update_match_a_table_built_from_scratch():
    rng = random.Random(3)
    words = sorted({"".join(rng.choice("abcxyz_é中") for _ in range(rng.randint(1, 6))) for _ in range(300)})
    table = TermTable.from_terms(words)
    assert all(table[w] == i for i, w in enumerate(words)) and "not-a-term" not in table
    added = ["zzz_new", "aaa_new", "mid_新"]
    live = np.ones(len(words) + len(added), dtype=bool)
    dead = set(rng.sample(range(len(words)), 40)) | {len(words) + 1}   # also one of the new terms
    live[list(dead)] = False
    updated = table.updated(added, live)
    expected = [t for i, t in enumerate(words + added) if live[i]]
    assert updated.by_id() == expected
    for term_id, term in enumerate(expected):          # binary search in the spliced blob
        assert updated.get(term) == term_id
    for i in dead:
        assert (words + added)[i] not in updated


def test_term_table_survives_a_save_and_load(tmp_path):
    table = TermTable.from_terms(["b", "a", "ü", "c_d", "a1"])
    table.save(tmp_path)
    loaded = TermTable.load(tmp_path)
    assert loaded.by_id() == ["b", "a", "ü", "c_d", "a1"]
    assert [loaded.get(t) for t in ("a", "ü", "a1", "zz")] == [1, 2, 4, None]


def test_postings_score_like_rank_bm25_and_update_like_a_fresh_build():
    rng = random.Random(11)
    vocab = [f"w{i}" for i in range(40)]
    docs = {f"{i:020x}": [rng.choice(vocab) for _ in range(rng.randint(0, 25))] for i in range(60)}
    ids = list(docs)
    postings = BM25Postings.from_token_lists(ids, [docs[i] for i in ids])
    okapi = BM25Okapi([docs[i] for i in ids])
    scorer = BM25Scorer.from_postings(postings)
    for _ in range(10):
        q = [rng.choice(vocab + ["unknown"]) for _ in range(rng.randint(1, 5))]
        np.testing.assert_allclose(scorer.scores(Counter(q)), okapi.get_scores(q), rtol=1e-10, atol=1e-12)

    # Drop a third of the documents, add new ones (with new terms), reorder: the update reuses the kept
    # documents' postings and must equal a build from scratch of the new corpus.
    kept = [i for i in ids if rng.random() > 0.33]
    fresh = {f"{1000 + i:020x}": [rng.choice(vocab + ["brandnew", "other_new"]) for _ in range(rng.randint(1, 20))]
             for i in range(15)}
    order = sorted(kept + list(fresh))
    encoder = TermEncoder(postings.terms)
    updated = postings.updated(order, {cid: encoder.encode(t) for cid, t in fresh.items()}, encoder)
    corpus = {**docs, **fresh}
    scratch = BM25Postings.from_token_lists(order, [corpus[i] for i in order])
    assert sorted(updated.terms.by_id()) == sorted(scratch.terms.by_id())   # no term of a dropped doc lingers
    a, b = BM25Scorer.from_postings(updated), BM25Scorer.from_postings(scratch)
    for q in (["brandnew"], ["w1", "w2", "w2"], vocab[:8], ["other_new", "w39"]):
        assert np.array_equal(a.scores(Counter(q)), b.scores(Counter(q)))
    with pytest.raises(KeyError):
        postings.updated([f"{999999:020x}"], {}, TermEncoder(postings.terms))


# ---------------------------------------------------------------- written by nav index, read by queries

def test_index_writes_the_state_for_its_generation_and_queries_load_it(tmp_path, nav_env):
    root = make_repo(tmp_path / "repo")
    index_repo(root)
    index = NavIndex.open(root)
    assert bm25_dirs(root) == [str(index.generation)]
    params = json.loads((root / ".nav" / "bm25" / str(index.generation) / "params.json").read_text())
    assert params["generation"] == index.generation and params["tokenizer_version"] == tokenizer_version()
    assert params["documents"] == index.chunk_count

    postings, why_not = index.bm25_postings()
    assert why_not is None
    assert_same_scoring(index, postings)

    fresh = NavIndex.open(root)
    retriever = BM25Retriever(fresh, Config.from_env())
    results = retriever.retrieve("Worker runs jobs for feature 3", 3)
    assert retriever.state_source == "persisted" and retriever.notes == []
    assert results and results[0].chunk.symbol.startswith("Worker3")
    assert fresh._chunks is None                 # only the hits were loaded, not every chunk


def test_persisted_and_in_memory_retrievers_rank_identically(tmp_path, nav_env):
    root = make_repo(tmp_path / "repo", modules=12)
    index_repo(root)
    persisted = BM25Retriever(NavIndex.open(root), Config.from_env())

    class NoPersistedState:
        """The same index seen without persisted postings (as test doubles and plugins' indexes are)."""

        def __init__(self, index):
            self._index = index

        def __getattr__(self, name):
            if name == "bm25_postings":
                raise AttributeError(name)
            return getattr(self._index, name)

    memory = BM25Retriever(NoPersistedState(NavIndex.open(root)), Config.from_env())
    for query in QUERIES + ["MAX_RETRIES_7 TIMEOUT_SECONDS_7", "compute_11 scale"]:
        a, b = persisted.retrieve(query, 8), memory.retrieve(query, 8)
        assert [(r.chunk.id, r.score) for r in a] == [(r.chunk.id, r.score) for r in b], query
    assert persisted.state_source == "persisted" and memory.state_source == "memory"


def _bump_generation(root: Path) -> None:
    """What a run killed after its commit but before writing the BM25 state leaves: nav.db one generation on."""
    conn = sqlite3.connect(root / ".nav" / "nav.db")
    manifest = json.loads(conn.execute("SELECT value FROM meta WHERE key='manifest'").fetchone()[0])
    manifest["generation"] += 1
    conn.execute("UPDATE meta SET value=? WHERE key='manifest'", (json.dumps(manifest),))
    conn.execute("UPDATE meta SET value=? WHERE key='generation'", (json.dumps(manifest["generation"]),))
    conn.execute("UPDATE meta SET value=? WHERE key='chroma_generation'", (json.dumps(manifest["generation"]),))
    conn.commit()
    conn.close()


def test_stale_generation_is_rebuilt_in_memory_with_a_note_and_the_next_run_rewrites_it(tmp_path, nav_env):
    root = make_repo(tmp_path / "repo")
    index_repo(root)
    expected = [(r.chunk.id, r.score) for r in BM25Retriever(NavIndex.open(root), Config.from_env()).retrieve("compute value", 5)]
    _bump_generation(root)
    index = NavIndex.open(root)
    postings, why_not = index.bm25_postings()
    assert postings is None and f"generation {index.generation}" in why_not
    retriever = BM25Retriever(index, Config.from_env())
    results = retriever.retrieve("compute value", 5)
    assert retriever.state_source == "memory"
    assert any("statistics rebuilt in memory" in n and f"generation {index.generation}" in n for n in retriever.notes)
    assert [(r.chunk.id, r.score) for r in results] == expected

    summary = index_repo(root)                         # nothing changed; the state is written again
    index = NavIndex.open(root)
    assert bm25_dirs(root) == [str(index.generation)] and index.bm25_postings()[1] is None
    assert not any("missing from the stored BM25 state" in n for n in summary.notes)


def test_params_from_another_generation_or_tokenizer_are_refused(tmp_path, nav_env):
    root = make_repo(tmp_path / "repo", modules=2)
    index_repo(root)
    index = NavIndex.open(root)
    params_file = root / ".nav" / "bm25" / str(index.generation) / "params.json"
    params = json.loads(params_file.read_text())
    params_file.write_text(json.dumps({**params, "generation": index.generation - 1}))
    assert "generation" in NavIndex.open(root).bm25_postings()[1]
    params_file.write_text(json.dumps({**params, "tokenizer_version": "code-tokens-0.old"}))
    assert "code-tokens-0.old" in NavIndex.open(root).bm25_postings()[1]
    (root / ".nav" / "bm25" / str(index.generation) / "post_docs.npy").write_bytes(b"not numpy")
    params_file.write_text(json.dumps(params))
    postings, why_not = NavIndex.open(root).bm25_postings()
    assert postings is None and "damaged" in why_not
    # a damaged or foreign state is no base for the next run: it reads the stored token lists instead
    index_repo(root)
    assert_same_scoring(NavIndex.open(root), NavIndex.open(root).bm25_postings()[0])


def test_state_follows_edits_and_deletes_incrementally(tmp_path, nav_env):
    root = make_repo(tmp_path / "repo", modules=8)
    index_repo(root)
    path = root / "pkg" / "mod2.py"
    path.write_text(path.read_text().replace("result = value * scale + 2", "result = quuxfrobnicate(value) * scale"))
    (root / "pkg" / "mod5.py").unlink()
    write(root, "pkg/added.py", "def zorblax_handler(event):\n    return event.zorblax\n")
    summary = index_repo(root)
    assert summary.files_changed == 2 and summary.files_deleted == 1
    assert not any("missing from the stored BM25 state" in n for n in summary.notes)   # the old state served

    index = NavIndex.open(root)
    postings, why_not = index.bm25_postings()
    assert why_not is None and bm25_dirs(root) == [str(index.generation)]
    assert_same_scoring(index, postings, QUERIES + ["quuxfrobnicate", "zorblax handler", "compute_5 feature 5"])
    assert all(t in postings.terms for t in query_tokens("quuxfrobnicate zorblax"))
    assert "compute_5" not in postings.terms          # only the deleted file held it
    retriever = BM25Retriever(index, Config.from_env())
    assert retriever.retrieve("quuxfrobnicate", 1)[0].chunk.path == "pkg/mod2.py"
    assert all(r.chunk.path != "pkg/mod5.py" for r in retriever.retrieve("compute_5 feature 5", 10))


def test_rebuild_clears_old_generations(tmp_path, nav_env):
    root = make_repo(tmp_path / "repo", modules=2)
    index_repo(root)
    index_repo(root)                                   # nothing changed: the same generation (issue 25, part 4)
    assert bm25_dirs(root) == ["1"]
    (root / "pkg" / "mod0.py").write_text("def changed():\n    return 2\n")
    index_repo(root)
    assert bm25_dirs(root) == ["2"]
    build_index(root.resolve(), Config.from_env(), rebuild=True)
    assert bm25_dirs(root) == ["1"] and NavIndex.open(root).bm25_postings()[1] is None


# ---------------------------------------------------------------- chunks by id, hybrid, vector store

def test_chunks_load_by_id_without_loading_all(tmp_path, nav_env):
    root = make_repo(tmp_path / "repo", modules=3)
    index_repo(root)
    every = {c.id: c for c in NavIndex.open(root).chunks()}
    index = NavIndex.open(root)
    some = list(every)[::3]
    assert index.chunks_by_ids(some + ["0" * 20]) == {cid: every[cid] for cid in some}
    assert index.chunk_by_id(some[0]) == every[some[0]]
    with pytest.raises(KeyError):
        index.chunk_by_id("f" * 20)
    assert index._chunks is None


def test_hybrid_query_loads_only_the_returned_chunks(tmp_path, nav_env):
    root = make_repo(tmp_path / "repo", modules=6)
    index_repo(root)
    index = NavIndex.open(root)
    results = HybridRetriever(index, Config.from_env()).retrieve("compute a scaled value for feature 4", 3)
    assert len(results) == 3 and index._chunks is None
    assert len(index._by_id) == 3                     # the fused top 3, not the heads' candidate depth


def test_vector_store_follows_each_run_by_its_changes(tmp_path, nav_env):
    root = make_repo(tmp_path / "repo", modules=5)
    index_repo(root)
    path = root / "pkg" / "mod1.py"
    path.write_text(path.read_text().replace("MAX_RETRIES_1 = 1", "MAX_RETRIES_1 = 11"))
    (root / "pkg" / "mod3.py").unlink()
    index_repo(root)
    index = NavIndex.open(root)
    stored = index._chroma().get(include=["embeddings"])
    ids = {c.id for c in index.chunks() if c.path != "data/table.csv"}   # the embed rule: a CSV stays lexical
    assert set(stored["ids"]) == ids
    conn = sqlite3.connect(root / ".nav" / "nav.db")
    vectors = {cid: np.frombuffer(v, dtype=np.float32) for cid, v in conn.execute(
        "SELECT c.id, e.vector FROM chunks c JOIN embeddings e USING (content_hash)")}
    conn.close()
    for cid, vec in zip(stored["ids"], stored["embeddings"]):
        np.testing.assert_allclose(vec, vectors[cid], atol=1e-6)


@pytest.mark.parametrize("reorder", [False, True])
def test_an_update_splicing_new_documents_in_equals_the_merge_and_a_fresh_build(monkeypatch, reorder):
    """The splice (kept documents in their order, a few new ones in between: a one-file re-index) and the
    general merge by sort give the same arrays, and both score like a fresh build of the new corpus."""
    from navigator.index import lexical
    rng = random.Random(5)
    vocab = [f"t{i}" for i in range(30)]
    docs = {f"{i * 10:020x}": [rng.choice(vocab) for _ in range(rng.randint(0, 12))] for i in range(50)}
    ids = sorted(docs)
    postings = BM25Postings.from_token_lists(ids, [docs[i] for i in ids])
    # One "file" (documents 20-24) re-chunked into three new documents at the same place, one removed
    # elsewhere, one new document at each end; words only a removed document had must go.
    fresh = {f"{201 + i:020x}": [rng.choice(vocab + ["spliced", "new_word"]) for _ in range(rng.randint(1, 9))]
             for i in range(3)} | {f"{0:019x}x": ["first"], f"{9999:020x}": ["last", "t1"]}
    order = sorted([i for n, i in enumerate(ids) if not 20 <= n < 25 and n != 40] + list(fresh))
    if reorder:
        order = order[::-1]                          # kept documents out of their old order: the merge path
    corpus = {**docs, **fresh}

    def update():
        encoder = TermEncoder(postings.terms)
        return postings.updated(order, {cid: encoder.encode(t) for cid, t in fresh.items()}, encoder)

    calls = []
    splice = BM25Postings._spliced
    monkeypatch.setattr(BM25Postings, "_spliced", lambda self, *a: calls.append(1) or splice(self, *a))
    spliced = update()
    assert len(calls) == (0 if reorder else 1)       # the splice ran where it applies, and only there
    monkeypatch.setattr(lexical, "_FEW_ADDED_TOKENS", -1)
    merged = update()
    for name in ("doc_ids", "doc_lengths", "offsets", "post_docs", "post_tfs"):
        assert np.array_equal(getattr(spliced, name), getattr(merged, name)), name
    assert spliced.terms.by_id() == merged.terms.by_id()
    scratch = BM25Postings.from_token_lists(order, [corpus[i] for i in order])
    assert sorted(spliced.terms.by_id()) == sorted(scratch.terms.by_id())
    a, b = BM25Scorer.from_postings(spliced), BM25Scorer.from_postings(scratch)
    for q in (["spliced"], ["first", "last"], vocab[:10], ["new_word", "t3", "t3"]):
        assert np.array_equal(a.scores(Counter(q)), b.scores(Counter(q)))
