"""The BM25 tokenizer: identifier splitting, digits, dotted names, CJK, stopwords, stemming, abbreviations."""
from __future__ import annotations

import pytest

from navigator.core.errors import InputError
from navigator.index import tokenize
from navigator.index.tokenize import (
    TOKENIZER_CODE_VERSION, USER_ABBREVIATIONS_ENV, document_tokens, split_identifier, stem,
)
from retrievers.query_terms import query_tokens


@pytest.fixture(autouse=True)
def no_user_abbreviations(monkeypatch):
    monkeypatch.delenv(USER_ABBREVIATIONS_ENV, raising=False)


def test_snake_case_constant_keeps_the_compound_and_splits_the_parts():
    assert document_tokens("FILE_TOOLS") == ["file_tools", "file", "tool"]


def test_camel_case_with_acronym_splits_at_the_acronym_boundaries():
    assert document_tokens("getHTTPResponse") == ["get_http_response", "get", "http", "response"]


@pytest.mark.parametrize("name, parts", [
    ("HTTP2Server", ["HTTP2", "Server"]),
    ("IOError", ["IO", "Error"]),
    ("Base64Encoder", ["Base64", "Encoder"]),
    ("parse_args", ["parse", "args"]),
    ("__init__", ["init"]),
    ("XMLHttpRequest", ["XML", "Http", "Request"]),
    ("lowercase", ["lowercase"]),
])
def test_split_identifier(name, parts):
    assert split_identifier(name) == parts


@pytest.mark.parametrize("text, expected", [
    ("utf8", ["utf8", "utf", "8"]),
    ("sha256", ["sha256", "sha", "256"]),
])
def test_letters_and_digits_yield_the_whole_and_both_runs(text, expected):
    assert document_tokens(text) == expected


def test_dunder_names_lose_their_underscores():
    tokens = document_tokens("def __init__(self):")
    assert not any("_" in t for t in tokens)
    assert tokens == ["initialize"]        # `init` is an abbreviation of initialize; def and self are stopwords


def test_dotted_names_keep_the_dotted_whole_and_each_name():
    assert document_tokens("os.path.join(root, name)") == ["os.path.join", "os", "path", "join", "root", "name"]
    # a stopword name does not make a dotted compound on its own
    assert "self.name" not in document_tokens("self.name")


def test_chinese_text_yields_unigrams_and_bigrams():
    tokens = document_tokens("读取配置")
    assert tokens == ["读", "取", "配", "置", "读取", "取配", "配置"]


def test_identifiers_inside_chinese_text_are_split():
    tokens = document_tokens("调用getValue函数")
    for expected in ("get_value", "get", "value", "调用", "函数"):
        assert expected in tokens
    assert "调用getvalue函数" not in tokens


def test_chinese_particles_are_dropped_as_unigrams_but_kept_in_bigrams():
    tokens = document_tokens("文件的路径")
    assert "的" not in tokens
    assert "件的" in tokens and "的路" in tokens


def test_full_width_letters_are_folded():
    assert document_tokens("ＦＩＬＥ＿ＴＯＯＬＳ") == document_tokens("FILE_TOOLS")


@pytest.mark.parametrize("short, long", [
    ("max", "maximum"), ("min", "minimum"), ("repo", "repository"), ("dir", "directory"),
    ("cfg", "configuration"), ("conf", "config"), ("msg", "message"), ("num", "number"), ("n", "number"),
    ("idx", "index"), ("err", "error"), ("arg", "argument"), ("param", "parameter"), ("env", "environment"),
    ("opt", "option"), ("cmd", "command"), ("ctx", "context"),
])
def test_abbreviations_meet_their_long_form_from_either_side(short, long):
    assert query_tokens(short) == document_tokens(long)
    assert query_tokens(long) == document_tokens(short)


def test_abbreviations_apply_to_inflected_forms_and_identifier_parts():
    assert set(document_tokens("args")) == set(query_tokens("arguments"))
    assert set(query_tokens("maximum length")) <= set(document_tokens("MAX_LEN = 10"))
    assert set(query_tokens("error messages")) <= set(document_tokens("err_msg"))


def test_stopwords_are_dropped_but_stay_inside_compounds():
    tokens = document_tokens("what does the value of is_valid mean for this")
    assert tokens == ["value", "is_valid", "valid", "mean"]
    assert document_tokens("the of and is to") == []


def test_backslash_escapes_are_not_words():
    assert document_tokens(r"print('head\ntail')") == ["print", "head", "tail"]
    assert document_tokens("n") == ["number"]


@pytest.mark.parametrize("word, expected", [
    ("running", "run"), ("stopped", "stop"), ("called", "call"), ("queries", "query"), ("classes", "class"),
    ("tools", "tool"), ("files", "file"), ("filing", "file"), ("making", "make"), ("typing", "type"),
    ("created", "creat"), ("currently", "current"),
    # left alone: -ss / -us / -is, -eed, protected words, short words, non-ASCII, digits
    ("process", "process"), ("status", "status"), ("analysis", "analysis"), ("speed", "speed"),
    ("embed", "embed"), ("alias", "alias"), ("sys", "sys"), ("abs", "abs"), ("thing", "thing"),
    ("string", "string"), ("naïve", "naïve"), ("md5s", "md5s"),
])
def test_stem(word, expected):
    assert stem(word) == expected


def test_inflections_meet_at_one_stem():
    assert len({stem(w) for w in ("encode", "encodes", "encoded", "encoding")}) == 1
    assert len({stem(w) for w in ("parse", "parsed", "parsing", "parses")}) == 1
    assert stem("file") == stem("files") == "file"


def test_compounds_are_not_stemmed():
    assert "running_tasks" in document_tokens("running_tasks")
    assert {"run", "task"} <= set(document_tokens("running_tasks"))


def test_query_and_document_tokens_agree():
    from retrievers.crosslingual import expand_query
    text = "Where does parseConfig read the MAX_RETRIES from os.environ? 读取配置"
    # Queries are tokenized like documents after cross-lingual expansion (which only touches CJK text).
    assert query_tokens(text) == document_tokens(expand_query(text))
    english = "Where does parseConfig read the MAX_RETRIES from os.environ?"
    assert query_tokens(english) == document_tokens(english)


def test_tokenizer_version_names_the_code_version_and_is_importable():
    from navigator.index.tokenize import TOKENIZER_VERSION

    assert TOKENIZER_VERSION.startswith(TOKENIZER_CODE_VERSION + ".")
    assert tokenize.tokenizer_version() == TOKENIZER_VERSION


def test_user_abbreviation_file_extends_the_table_and_changes_the_version(tmp_path, monkeypatch):
    before = tokenize.tokenizer_version()
    assert "kubernetes" not in document_tokens("k8s")
    user = tmp_path / "abbr.tsv"
    user.write_text("# my team's words\nkubernetes\tk8s\tkube\n", encoding="utf-8")
    monkeypatch.setenv(USER_ABBREVIATIONS_ENV, str(user))
    assert document_tokens("k8s") == document_tokens("kube") == ["kubernetes"]
    assert document_tokens("cfg") == ["config"]          # the packaged table still applies
    assert tokenize.tokenizer_version() != before


def test_malformed_user_abbreviation_file_names_the_line(tmp_path, monkeypatch):
    user = tmp_path / "abbr.tsv"
    user.write_text("kubernetes\tk8s\njust-one-word\n", encoding="utf-8")
    monkeypatch.setenv(USER_ABBREVIATIONS_ENV, str(user))
    with pytest.raises(InputError) as info:
        document_tokens("anything")
    assert f"{user}:2" in info.value.message and info.value.hint


def test_missing_user_abbreviation_file_is_an_input_error(tmp_path, monkeypatch):
    monkeypatch.setenv(USER_ABBREVIATIONS_ENV, str(tmp_path / "nope.tsv"))
    with pytest.raises(InputError) as info:
        document_tokens("anything")
    assert USER_ABBREVIATIONS_ENV in info.value.message and "unset" in info.value.hint


@pytest.mark.parametrize("text, wanted", [
    # Go's MixedCaps keep initialisms whole: the compound, then each word
    ("func (r *Router) ServeHTTP(w http.ResponseWriter", ["router", "serve_http", "http", "response_writer"]),
    ("chi.URLParam(r, key)", ["chi.url_param", "url_param", "url", "parameter"]),
    # a Rust path: each segment is a word
    ("use std::io::Result;", ["std", "io", "result"]),
    # TypeScript generics and decorators: the type names and the decorator's name are words
    ("const routes: Map<string, Array<Entry<V>>> = new Map();", ["map", "array", "entry"]),
    ("@Component({selector: 'app'}) export class AppShell", ["component", "selector", "app_shell", "shell"]),
    # a C macro: the constant's compound and its expanded parts
    ("#define MAX_PATH_LEN 4096", ["max_path_len", "maximum", "path", "length", "4096"]),
])
def test_other_languages_identifiers_tokenize_like_pythons(text, wanted):
    """issue 23: the code-aware tokens need no language of their own; query and chunk agree."""
    tokens = document_tokens(text)
    assert all(w in tokens for w in wanted), (wanted, tokens)
    assert query_tokens(text) == tokens
