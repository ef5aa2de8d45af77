"""Cross-lingual query expansion: English words appended to a Chinese query, from a bilingual glossary.

The indexed code and its comments are English and the default embedder (all-MiniLM-L6-v2) is English-only,
so a query written in Chinese meets the index only through the identifiers it quotes in Latin script.
`expand_query` finds programming vocabulary in the query's CJK runs and appends its English words:

    expand_query("帮助文本默认多宽")  ->  "帮助文本默认多宽 help text default width"

The original text stays first, so identifiers and the CJK n-grams still count; text without CJK characters
is returned unchanged, so English queries are unaffected. Queries only: documents are never expanded, which
is why the BM25 tokenizer's version does not depend on the glossary.

Segmentation is greedy forward longest match (the classic dictionary segmenter): at each position of a CJK
run the longest glossary term starting there wins and the scan continues after it; a character that starts
no term is skipped. So 默认值 matches as "default value", not as 默认 + 值.

The glossary is retrievers/data/zh_en_glossary.tsv (package data): one term per line, the Chinese term, a
TAB, then its English words separated by spaces (further TABs count as spaces); '#' starts a comment line.
NAV_GLOSSARY may name a user TSV in the same format, read after the shipped one: its lines add terms or
replace the English of a term already present.

GLOSSARY_VERSION names the glossary in effect (code version + digest of the shipped and user files), for
eval runs and caches that need to tell expansions apart. Computed on access, as NAV_GLOSSARY is read then.
"""
from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

from navigator.core.errors import InputError
from navigator.core.datafiles import read_user_file, user_file_key

GLOSSARY_CODE_VERSION = "zh-en-glossary-1"
USER_GLOSSARY_ENV = "NAV_GLOSSARY"
_DATA_PACKAGE = "retrievers"
_DATA_DIR = "data"
GLOSSARY_FILE = "zh_en_glossary.tsv"
_DIGEST_CHARS = 10

# The same scripts navigator.index.tokenize treats as CJK (ideographs, extension A, compatibility ideographs,
# kana); kept here rather than imported because tokenize imports this module.
_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_RUN = re.compile(f"[{_CJK_CHARS}]+")
_HAS_CJK = re.compile(f"[{_CJK_CHARS}]")


def has_cjk(text: str) -> bool:
    """Whether `text` holds a CJK character: the test for "a question the English-only embedder cannot read"."""
    return _HAS_CJK.search(text) is not None


@dataclass(frozen=True)
class Glossary:
    """Chinese term -> its English words, and the glossary's version string."""

    terms: Mapping[str, tuple[str, ...]]
    version: str

    @property
    def longest_term(self) -> int:
        return max(map(len, self.terms), default=0)

    def matches(self, text: str) -> list[str]:
        """The glossary terms found in the CJK runs of `text`, in text order (greedy forward longest match)."""
        found: list[str] = []
        longest = self.longest_term
        for run in _CJK_RUN.findall(unicodedata.normalize("NFKC", text)):
            i = 0
            while i < len(run):
                for length in range(min(longest, len(run) - i), 0, -1):
                    term = run[i:i + length]
                    if term in self.terms:
                        found.append(term)
                        i += length
                        break
                else:
                    i += 1   # no term starts at this character
        return found

    def english_words(self, text: str) -> list[str]:
        """The English words of the terms found in `text`, in order, each word once (case-insensitive)."""
        seen: set[str] = set()
        words: list[str] = []
        for term in self.matches(text):
            for word in self.terms[term]:
                if word.lower() not in seen:
                    seen.add(word.lower())
                    words.append(word)
        return words


def parse_glossary(text: str, source: str) -> dict[str, tuple[str, ...]]:
    """Terms of a glossary TSV, later lines winning on a repeated term. Raises InputError on a line without
    English words, or whose first column has no CJK character (it could never match: columns swapped?)."""
    terms: dict[str, tuple[str, ...]] = {}
    hint = "write the Chinese term, a TAB, then its English words separated by spaces"
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        chinese, _, english = line.partition("\t")
        chinese = unicodedata.normalize("NFKC", chinese.strip())
        words = tuple(english.split())
        if not words:
            raise InputError(f"{source}:{lineno}: a glossary line needs a Chinese term, a TAB and English words, "
                             f"got {line.strip()!r}", hint=hint)
        if not _HAS_CJK.search(chinese):
            raise InputError(f"{source}:{lineno}: the term {chinese!r} has no Chinese or Japanese character, so "
                             "it would never match", hint=hint)
        terms[chinese] = words
    return terms


@lru_cache(maxsize=4)
def _glossary_for(user_file: Path | None, user_mtime_ns: int | None) -> Glossary:
    # user_mtime_ns is part of the cache key only: an edited user file builds a new glossary.
    shipped = resources.files(_DATA_PACKAGE).joinpath(_DATA_DIR, GLOSSARY_FILE).read_text(encoding="utf-8")
    terms = parse_glossary(shipped, f"retrievers/{_DATA_DIR}/{GLOSSARY_FILE}")
    digest = hashlib.sha256(shipped.encode())
    if user_file is not None:
        user_text = read_user_file(user_file, USER_GLOSSARY_ENV)
        terms.update(parse_glossary(user_text, str(user_file)))
        digest.update(b"\0" + user_text.encode())
    return Glossary(terms=terms, version=f"{GLOSSARY_CODE_VERSION}.{digest.hexdigest()[:_DIGEST_CHARS]}")


def current_glossary() -> Glossary:
    """The glossary for the current environment (NAV_GLOSSARY is read on every call; cheap)."""
    return _glossary_for(*user_file_key(USER_GLOSSARY_ENV))


def glossary_version() -> str:
    return current_glossary().version


def expand_query(text: str, glossary: Glossary | None = None) -> str:
    """`text` followed by the English words of the glossary terms in its CJK runs; unchanged when it has
    no CJK character or no term matches."""
    if not _HAS_CJK.search(text):
        return text
    words = (glossary or current_glossary()).english_words(text)
    return f"{text} {' '.join(words)}" if words else text


def __getattr__(name: str) -> str:
    # GLOSSARY_VERSION is computed on access: it depends on NAV_GLOSSARY.
    if name == "GLOSSARY_VERSION":
        return glossary_version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
