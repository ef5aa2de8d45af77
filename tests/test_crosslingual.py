"""Cross-lingual query expansion: glossary parsing, longest-match lookup, NAV_GLOSSARY, and its wiring into
the BM25 query tokens, the vector head and the hybrid retriever (documents are never expanded)."""
from __future__ import annotations

import os

import pytest

from chunkers.base import CodeChunk
from navigator.core.config import Config
from navigator.core.errors import InputError
from retrievers import crosslingual
from retrievers.bm25 import BM25Retriever
from retrievers.crosslingual import (
    USER_GLOSSARY_ENV, Glossary, current_glossary, expand_query, glossary_version, parse_glossary,
)
from retrievers.hybrid import HybridRetriever
from navigator.index.tokenize import USER_ABBREVIATIONS_ENV, document_tokens, tokenizer_version
from retrievers.query_terms import query_tokens
from retrievers.vector import VectorRetriever

# The shipped glossary is general vocabulary; a few hundred terms at least are expected of it.
MIN_SHIPPED_TERMS = 300


@pytest.fixture(autouse=True)
def no_user_files(monkeypatch):
    monkeypatch.delenv(USER_GLOSSARY_ENV, raising=False)
    monkeypatch.delenv(USER_ABBREVIATIONS_ENV, raising=False)


def glossary(**terms: str) -> Glossary:
    return Glossary(terms={k: tuple(v.split()) for k, v in terms.items()}, version="test")


# ---------------------------------------------------------------- lookup and expansion

def test_shipped_glossary_expands_the_documented_example():
    assert expand_query("帮助文本默认多宽") == "帮助文本默认多宽 help text default width"


@pytest.mark.parametrize("text", ["where is the default width of help text", "getValue(x)", "", "  "])
def test_text_without_cjk_is_returned_unchanged(text):
    assert expand_query(text) is text


def test_cjk_text_without_any_term_is_returned_unchanged():
    assert expand_query("你好", glossary(默认="default")) == "你好"


def test_the_longest_term_wins_over_its_parts():
    g = glossary(默认="default", 值="value", 默认值="fallback")
    assert g.matches("默认值") == ["默认值"]
    assert expand_query("默认值是什么", g) == "默认值是什么 fallback"


def test_characters_that_start_no_term_are_skipped_and_the_scan_goes_on():
    g = glossary(宽度="width", 颜色="color")
    assert g.matches("的宽度和的颜色") == ["宽度", "颜色"]


def test_each_cjk_run_is_searched_and_latin_text_stays_in_front():
    g = glossary(调用="call", 参数="parameter argument")
    assert expand_query("调用 getValue 的参数", g) == "调用 getValue 的参数 call parameter argument"


def test_english_words_are_listed_once_in_first_seen_order():
    g = glossary(参数="parameter argument", 实参="Argument", 形参="parameter formal")
    assert g.english_words("参数实参形参") == ["parameter", "argument", "formal"]


def test_compatibility_ideographs_are_normalised_before_matching():
    g = glossary(豈="nominal")   # U+8C48; the text below writes U+F900, its compatibility twin
    assert g.matches("\uf900") == ["豈"]


# ---------------------------------------------------------------- the TSV format and NAV_GLOSSARY

def test_parse_glossary_reads_terms_and_skips_comments_and_blank_lines():
    text = "# a comment\n\n函数\tfunction\n参数\tparameter\targument\n  # indented comment\n"
    assert parse_glossary(text, "g.tsv") == {"函数": ("function",), "参数": ("parameter", "argument")}


def test_parse_glossary_later_lines_win():
    assert parse_glossary("键\tkey\n键\tkeyboard key\n", "g.tsv") == {"键": ("keyboard", "key")}


@pytest.mark.parametrize("line, fragment", [
    ("函数", "needs a Chinese term"),
    ("函数\t   ", "needs a Chinese term"),
    ("function\t函数", "never match"),
])
def test_parse_glossary_rejects_unusable_lines_with_their_line_number(line, fragment):
    with pytest.raises(InputError) as raised:
        parse_glossary(f"# header\n{line}\n", "my.tsv")
    assert "my.tsv:2" in raised.value.message and fragment in raised.value.message
    assert raised.value.hint


def test_shipped_glossary_parses_and_is_general_vocabulary():
    terms = current_glossary().terms
    assert len(terms) >= MIN_SHIPPED_TERMS
    assert all(word.isascii() for words in terms.values() for word in words)


def test_user_glossary_adds_and_overrides_terms_and_changes_the_version(tmp_path, monkeypatch):
    shipped_version = glossary_version()
    user = tmp_path / "mine.tsv"
    user.write_text("# mine\n水獭\totter\n宽度\tbreadth\n", encoding="utf-8")
    monkeypatch.setenv(USER_GLOSSARY_ENV, str(user))
    assert expand_query("水獭的宽度") == "水獭的宽度 otter breadth"
    assert glossary_version() != shipped_version
    assert crosslingual.GLOSSARY_VERSION == glossary_version()


def test_an_edited_user_glossary_is_read_again(tmp_path, monkeypatch):
    user = tmp_path / "mine.tsv"
    user.write_text("水獭\totter\n", encoding="utf-8")
    monkeypatch.setenv(USER_GLOSSARY_ENV, str(user))
    assert expand_query("水獭") == "水獭 otter"
    user.write_text("水獭\tlutra\n", encoding="utf-8")
    stat = user.stat()
    os.utime(user, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))   # a visible mtime change
    assert expand_query("水獭") == "水獭 lutra"


def test_unreadable_user_glossary_raises_input_error(tmp_path, monkeypatch):
    monkeypatch.setenv(USER_GLOSSARY_ENV, str(tmp_path / "missing.tsv"))
    with pytest.raises(InputError) as raised:
        expand_query("函数")
    assert USER_GLOSSARY_ENV in raised.value.message and USER_GLOSSARY_ENV in raised.value.hint


# ---------------------------------------------------------------- BM25: queries expanded, documents not

def test_query_tokens_carry_the_english_words_and_document_tokens_do_not():
    text = "读取配置文件"
    assert {"read", "config", "file"} <= set(query_tokens(text))
    assert not {"read", "config", "file"} & set(document_tokens(text))
    assert set(document_tokens(text)) <= set(query_tokens(text))   # the CJK n-grams still count


def test_english_query_tokens_still_equal_document_tokens():
    text = "Where does parseConfig read the MAX_RETRIES from os.environ?"
    assert query_tokens(text) == document_tokens(text)


def test_the_glossary_does_not_change_the_tokenizer_version(tmp_path, monkeypatch):
    before = tokenizer_version()
    user = tmp_path / "mine.tsv"
    user.write_text("水獭\totter\n", encoding="utf-8")
    monkeypatch.setenv(USER_GLOSSARY_ENV, str(user))
    assert expand_query("水獭") != "水獭"
    assert tokenizer_version() == before


def chunk(path: str, symbol: str, text: str) -> CodeChunk:
    return CodeChunk(path=path, start_line=1, end_line=1 + text.count("\n"), kind="function", text=text,
                     symbol=symbol)


CORPUS = [
    chunk("fmt.py", "HelpFormatter.width", "def width(self):\n    # default width of the help text\n    return 80"),
    chunk("io.py", "open_file", "def open_file(path, mode):\n    return open(path, mode)"),
    chunk("env.py", "read_env", "def read_env(name):\n    return os.environ.get(name)"),
]


class FakeIndex:
    """The NavIndex surface the retrievers use; the vector head records what it was asked to embed."""

    def __init__(self, chunks):
        self._chunks = list(chunks)
        self._by_id = {c.id: c for c in self._chunks}
        self.vector_calls: list[str] = []
        self.manifest = {"chunk_count": len(self._chunks)}
        self.tokenizer_version = tokenizer_version()
        self._stored = {c.id: document_tokens(c.embed_text) for c in self._chunks}

    def chunks(self):
        return self._chunks

    def chunk_by_id(self, chunk_id):
        return self._by_id[chunk_id]

    def chunk_paths(self):
        return {c.id: c.path for c in self._chunks}

    def bm25_tokens(self):
        return self._stored

    def vector_search(self, query, k):
        self.vector_calls.append(query)
        return [(c.id, 1.0 - i / 10) for i, c in enumerate(self._chunks[:k])]


def test_bm25_finds_english_code_for_a_chinese_question():
    retriever = BM25Retriever(FakeIndex(CORPUS), Config())
    results = retriever.retrieve("帮助文本默认多宽", 3)
    assert results and results[0].chunk.symbol == "HelpFormatter.width"


# ---------------------------------------------------------------- vector and hybrid heads

def test_vector_head_embeds_the_expanded_query_and_says_so():
    index = FakeIndex(CORPUS)
    retriever = VectorRetriever(index, Config())
    retriever.retrieve("帮助文本默认多宽", 2)
    assert index.vector_calls == ["帮助文本默认多宽 help text default width"]
    assert any("expanded" in n and "help text default width" in n for n in retriever.notes)


def test_vector_head_embeds_an_english_query_as_it_is_without_a_note():
    index = FakeIndex(CORPUS)
    retriever = VectorRetriever(index, Config())
    retriever.retrieve("default help width", 2)
    assert index.vector_calls == ["default help width"]
    assert retriever.notes == []


def test_hybrid_expands_once_per_head():
    index = FakeIndex(CORPUS)
    retriever = HybridRetriever(index, Config())
    query = "帮助文本默认多宽"
    results = retriever.retrieve(query, 3)
    assert index.vector_calls == [expand_query(query)]          # expanded once, not twice
    assert any(n.startswith("vector: query expanded") for n in retriever.notes)
    width = next(r for r in results if r.chunk.symbol == "HelpFormatter.width")
    assert width.heads["bm25"].rank == 1                         # bm25 matched the English words
