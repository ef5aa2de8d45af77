"""Code-aware tokens for BM25: the same analysis turns documents (here, at index time) and queries
(retrievers.query_terms, which adds the query-only cross-lingual expansion) into terms.

What one word of text becomes (`document_tokens("getHTTPResponse(FILE_TOOLS)")`):

  identifiers    split on `_`, camelCase and acronym boundaries; each part lowercased, and a compound of
                 two or more parts is kept verbatim in snake form besides:
                   FILE_TOOLS      -> file_tools, file, tool
                   getHTTPResponse -> get_http_response, get, http, response
                   __init__        -> initialize            (dunder underscores stripped, then abbreviations)
  digits         a part mixing letters and digits also yields its letter and digit runs:
                   utf8 -> utf8, utf, 8        sha256 -> sha256, sha, 256
  dotted names   each name as above, plus the dotted whole:  os.path.join -> os.path.join, os, path, join
  stopwords      dropped (navigator/index/data/stopwords.txt), except inside a compound
  stemming       a light suffix stemmer on the alphabetic parts only (see `stem`); compounds stay unstemmed
  abbreviations  every form of a group in navigator/index/data/abbreviations.tsv (plus the user's NAV_ABBREVIATIONS
                 file) is rewritten to the group's canonical word: max -> maximum, args -> argument
  CJK text       Chinese/Japanese runs have no spaces, so each run yields its characters as unigrams plus
                 its adjacent pairs as bigrams (the usual CJK n-gram indexing; no dictionary segmenter to
                 ship): 读取文件 -> 读, 取, 文, 件, 读取, 取文, 文件. Identifiers inside such text are split
                 as usual: 调用getValue函数 -> 调, 用, 调用, get_value, get, value, 函, 数, 函数.
  escapes        the letter after a backslash is not a word (`\\n` does not become n -> number).

TOKENIZER_VERSION names the output: it combines TOKENIZER_CODE_VERSION (bump it when this code changes its
output) with a digest of the stopword and abbreviation tables in effect, the user's file included, so
editing any of them makes existing indexes re-tokenize. It is computed on access (module __getattr__),
because NAV_ABBREVIATIONS is read at that moment.
"""
from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from collections.abc import Callable
from importlib import resources
from itertools import chain
from pathlib import Path

from navigator.core.errors import InputError
from navigator.core.datafiles import read_user_file, user_file_key

TOKENIZER_CODE_VERSION = "code-tokens-1"
USER_ABBREVIATIONS_ENV = "NAV_ABBREVIATIONS"
_DATA_PACKAGE = "navigator.index"   # the tables live in navigator/index/data/, shipped as package data
_DATA_DIR = "data"
STOPWORDS_FILE = "stopwords.txt"
ABBREVIATIONS_FILE = "abbreviations.tsv"
_DIGEST_CHARS = 10

# Identifier words repeat heavily across a corpus, so their token lists are memoised per tokenizer.
WORD_CACHE_SIZE = 1 << 17

# Ideographs (CJK unified + extension A + compatibility) and Japanese kana: scripts written without spaces.
# Hangul is written with spaces and is left to the word rule.
_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_RUN = re.compile(f"([{_CJK_CHARS}]+)")
# A word: word characters, optionally dotted (os.path.join, core.py), not starting right after a backslash.
_WORD = re.compile(r"(?<!\\)\w+(?:\.\w+)*")
_LETTER_AND_DIGIT_RUNS = re.compile(r"[^\W\d_]+|\d+")

# Stemmer limits: words shorter than this are never stemmed.
_MIN_STEM_INPUT = 4
_VOWELS = frozenset("aeiou")
# Final consonants that stay doubled after removing -ing/-ed (call-ed, pass-ing, buzz-ing).
_KEEP_DOUBLE = frozenset("lsz")
# After removing -ed/-ing these endings get their e back (creat-ed -> create, enabl-ed -> enable).
_RESTORE_E_ENDINGS = ("at", "bl", "iz")
# Endings of -ly adverbs whose adjective is worth matching (currently -> current, recursively -> recursive).
_LY_ADJECTIVE_ENDINGS = ("al", "ful", "ous", "ive", "ent", "ant", "less", "ic")
# Words the suffix rules would damage; kept as they are (also after losing a plural -s: embeds -> embed).
_STEM_EXCEPTIONS = frozenset({
    "alias", "bias", "canvas", "atlas", "always", "perhaps", "news", "series", "species", "physics",
    "mathematics", "lens", "embed", "during", "thing", "nothing", "something", "anything", "everything",
})


def stem(word: str) -> str:
    """A light English suffix stemmer (a few of Porter's step-1 and step-5 rules) for lowercase ASCII words;
    anything else - digits, underscores, non-ASCII, words under 4 letters - is returned unchanged.

    1. plurals: -ies -> -y, -sses -> -ss, -s (not after s/u/i: class, status, analysis)
    2. -ed / -ing when the rest has a vowel (not -eed: speed); then put back an e after at/bl/iz
       (created -> create), undouble a final consonant except l/s/z (running -> run, calling -> call),
       or put back the e of a short consonant-vowel-consonant stem (making -> make, typing -> type)
    3. -ly after an adjective ending (currently -> current)
    4. a final silent e goes unless the stem is one short syllable (encode -> encod, but file stays file),
       so encode / encodes / encoded / encoding all meet at `encod`.
    """
    if len(word) < _MIN_STEM_INPUT or not (word.isascii() and word.isalpha()) or word in _STEM_EXCEPTIONS:
        return word
    w = word
    if w.endswith("ies") and len(w) > _MIN_STEM_INPUT:
        w = w[:-3] + "y"
    elif w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    if w in _STEM_EXCEPTIONS:
        return w
    for suffix in ("ing", "ed"):
        if w.endswith(suffix) and not w.endswith("eed"):
            base = w[: -len(suffix)]
            if _has_vowel(base):
                w = _after_suffix_removal(base)
            break
    if w.endswith("ly") and w[:-2].endswith(_LY_ADJECTIVE_ENDINGS) and len(w) - 2 >= _MIN_STEM_INPUT:
        w = w[:-2]
    if w.endswith("e"):
        base = w[:-1]
        m = _measure(base)
        if m > 1 or (m == 1 and not _ends_cvc(base)):
            w = base
    return w


def _after_suffix_removal(base: str) -> str:
    if base.endswith(_RESTORE_E_ENDINGS):
        return base + "e"
    if len(base) > 1 and base[-1] == base[-2] and _is_consonant(base, len(base) - 1) and base[-1] not in _KEEP_DOUBLE:
        return base[:-1]
    if _measure(base) == 1 and _ends_cvc(base):
        return base + "e"
    return base


def _is_consonant(word: str, i: int) -> bool:
    ch = word[i]
    if ch in _VOWELS:
        return False
    if ch == "y":   # y after a consonant sounds as a vowel (typ-e, sync)
        return i == 0 or not _is_consonant(word, i - 1)
    return True


def _has_vowel(word: str) -> bool:
    return any(not _is_consonant(word, i) for i in range(len(word)))


def _measure(word: str) -> int:
    """Porter's m: the number of vowel-run -> consonant-run transitions (tr-ee 0, fil 1, encod 2)."""
    m, prev_vowel = 0, False
    for i in range(len(word)):
        consonant = _is_consonant(word, i)
        if consonant and prev_vowel:
            m += 1
        prev_vowel = not consonant
    return m


def _ends_cvc(word: str) -> bool:
    """Consonant-vowel-consonant at the end, the last not w/x/y: one short syllable such as fil, mak, typ."""
    n = len(word)
    return (n >= 3 and _is_consonant(word, n - 3) and not _is_consonant(word, n - 2)
            and _is_consonant(word, n - 1) and word[-1] not in "wxy")


def split_identifier(name: str) -> list[str]:
    """`getHTTPResponse` -> ['get', 'HTTP', 'Response']; `FILE_TOOLS` -> ['FILE', 'TOOLS']; digits stay attached
    to the letters before them (`Base64Encoder` -> ['Base64', 'Encoder']). Case is preserved."""
    parts: list[str] = []
    for piece in name.split("_"):
        if not piece:
            continue
        start = 0
        for i in range(1, len(piece)):
            ch, prev = piece[i], piece[i - 1]
            if not ch.isupper():
                continue
            # getH|ttp, utf8|Reader: an upper letter after a lower letter or a digit starts a word;
            # HTTP|Response: inside an upper run, the last upper letter before a lower one starts a word.
            if prev.islower() or prev.isdigit() or (
                    prev.isupper() and i + 1 < len(piece) and piece[i + 1].islower()):
                parts.append(piece[start:i])
                start = i
        parts.append(piece[start:])
    return parts


@dataclass
class Tokenizer:
    """One configuration of the tokenizer: its stopwords, its abbreviation map and its version string."""

    stopwords: frozenset[str]
    abbreviations: dict[str, str]      # any form or form-stem -> canonical word
    version: str
    _cache: Callable[[str], tuple[str, ...]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._cache = lru_cache(maxsize=WORD_CACHE_SIZE)(self._word_tokens)

    def tokens(self, text: str) -> list[str]:
        out: list[str] = []
        word_tokens = self._cache
        # NFKC folds full-width letters (common in Chinese text) and ligatures into their plain forms.
        text = unicodedata.normalize("NFKC", text)
        for i, segment in enumerate(_CJK_RUN.split(text)):
            if i % 2:   # re.split with a capture group puts the CJK runs at odd positions
                out.extend(self._cjk_tokens(segment))
            else:
                # findall + map keep the per-word loop in C; most words are cache hits.
                out.extend(chain.from_iterable(map(word_tokens, _WORD.findall(segment))))
        return out

    def _cjk_tokens(self, run: str) -> list[str]:
        unigrams = [ch for ch in run if ch not in self.stopwords]
        bigrams = [run[i:i + 2] for i in range(len(run) - 1)]
        return unigrams + bigrams

    def _word_tokens(self, word: str) -> tuple[str, ...]:
        names = word.split(".")
        out: list[str] = []
        kept_names: list[str] = []
        for name in names:
            name_tokens, kept = self._identifier_tokens(name)
            out.extend(name_tokens)
            if kept:
                kept_names.append("_".join(p.lower() for p in split_identifier(name)))
        if len(kept_names) > 1:
            out.insert(0, ".".join(kept_names))
        return tuple(out)

    def _identifier_tokens(self, name: str) -> tuple[list[str], bool]:
        """Tokens of one undotted identifier, and whether it carries any non-stopword content."""
        parts = [p.lower() for p in split_identifier(name)]
        out: list[str] = []
        if len(parts) > 1:
            out.append("_".join(parts))
        for part in parts:
            term = self._normalize(part)
            if term is not None:
                out.append(term)
            if part in self.abbreviations:   # k8s -> kubernetes, not also k and 8
                continue
            runs = _LETTER_AND_DIGIT_RUNS.findall(part)
            if len(runs) > 1:   # utf8 -> utf, 8
                out.extend(t for t in map(self._normalize, runs) if t is not None)
        return out, bool(out)

    def _normalize(self, part: str) -> str | None:
        """A lowercase part -> its term: None for a stopword, else canonical abbreviation or stem."""
        if part in self.stopwords:
            return None
        canonical = self.abbreviations.get(part)
        if canonical is not None:
            return canonical
        stemmed = stem(part)
        if stemmed in self.stopwords:
            return None
        return self.abbreviations.get(stemmed, stemmed)


def _read_data_file(name: str) -> str:
    return resources.files(_DATA_PACKAGE).joinpath(_DATA_DIR, name).read_text(encoding="utf-8")


def parse_stopwords(text: str) -> frozenset[str]:
    words = (line.split("#", 1)[0].strip().lower() for line in text.splitlines())
    return frozenset(w for w in words if w)


def parse_abbreviations(text: str, source: str) -> list[list[str]]:
    """Groups of a TSV: canonical word first, then its forms. Raises InputError on a line with one column."""
    groups: list[list[str]] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = [f.strip().lower() for f in line.split("\t") if f.strip()]
        if len(fields) < 2:
            raise InputError(f"{source}:{lineno}: an abbreviation line needs at least two tab-separated words, "
                             f"got {line.strip()!r}",
                             hint="write the canonical word, a TAB, then each abbreviation separated by TABs")
        groups.append(fields)
    return groups


def build_abbreviation_map(groups: list[list[str]]) -> dict[str, str]:
    """Form -> canonical. Later groups win on a shared form; stems of forms are added where free, so that
    inflections meet their group too (`args` stems to `arg`, `messages` to `messag` = stem of `message`)."""
    direct: dict[str, str] = {}
    for canonical, *forms in groups:
        for form in (canonical, *forms):
            direct[form] = canonical
    mapping = dict(direct)
    for form, canonical in direct.items():
        mapping.setdefault(stem(form), canonical)
    return mapping


@lru_cache(maxsize=4)
def _tokenizer_for(user_file: Path | None, user_mtime_ns: int | None) -> Tokenizer:
    # user_mtime_ns is part of the cache key only: an edited user file builds a new tokenizer.
    stop_text = _read_data_file(STOPWORDS_FILE)
    abbr_text = _read_data_file(ABBREVIATIONS_FILE)
    groups = parse_abbreviations(abbr_text, f"navigator/index/data/{ABBREVIATIONS_FILE}")
    digest = hashlib.sha256(stop_text.encode() + b"\0" + abbr_text.encode())
    if user_file is not None:
        user_text = read_user_file(user_file, USER_ABBREVIATIONS_ENV)
        groups += parse_abbreviations(user_text, str(user_file))
        digest.update(b"\0" + user_text.encode())
    return Tokenizer(
        stopwords=parse_stopwords(stop_text),
        abbreviations=build_abbreviation_map(groups),
        version=f"{TOKENIZER_CODE_VERSION}.{digest.hexdigest()[:_DIGEST_CHARS]}",
    )


def current_tokenizer() -> Tokenizer:
    """The tokenizer for the current environment (NAV_ABBREVIATIONS is read on every call; cheap)."""
    return _tokenizer_for(*user_file_key(USER_ABBREVIATIONS_ENV))


def tokenizer_version() -> str:
    return current_tokenizer().version


def document_tokens(text: str) -> list[str]:
    """The BM25 terms of a chunk's embed_text, in text order, repeats kept (they are term frequencies)."""
    return current_tokenizer().tokens(text)


def __getattr__(name: str) -> str:
    # TOKENIZER_VERSION is computed on access: it depends on the data files and NAV_ABBREVIATIONS.
    if name == "TOKENIZER_VERSION":
        return tokenizer_version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
