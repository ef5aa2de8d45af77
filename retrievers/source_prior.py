"""Which paths are not the source a question usually asks about, and how much their evidence counts: one rule
for the chunk ranking (hybrid, and the share graph passes along an edge) and the file ranking
(retrievers.file_rank).

Non-source, by kind (`non_source_kind`):
  test        tests/, testing/, test_*.py, *_test.py, conftest.py
  docs        docs/, doc/, and release notes and changelogs (CHANGES*, CHANGELOG*, HISTORY*, NEWS*, RELEASE*,
              whats-new*, wherever they are)
  example     examples/, samples/, benchmarks/
  tooling     CI and issue templates (.github/, .gitlab/, .circleci/, .travis.yml, azure-pipelines.yml, ...) and
              tool configuration (pylintrc, tox.ini, setup.cfg, .flake8, mypy.ini, .coveragerc, .pre-commit-config)
  vendored    another project's code copied in: a vendor/, _vendor/, third_party/, extern/ folder (as
              navigator.index.embed_rule has it), or a packages/ folder inside a package
              (requests/packages/urllib3/)
A test repeats the words of the behaviour it checks, a doc page or a changelog entry describes it in prose, an
issue template repeats a bug report's headings, a vendored copy holds another project's code: all match a
question well, while a developer asking how something works, or a bug report asking what must change, wants
the code that does it.

How much they count: x NAV_SOURCE_PRIOR (default 0.5; 1 turns the prior off) for a question, and x its square
for a bug report (a query over retrievers.query_analysis.LONG_QUERY_CHARS), whose words a changelog entry or
an issue template repeat most (patches/0026). Unless the query asks for that kind: a question that speaks of
tests, docs, changelogs, CI or vendored code (in English or Chinese) counts them in full; a bug report does
only when its title (first line) does, since a report's body says "the test fails" whatever it is about.
NAV_FILE_PRIOR, the setting's name when it covered the file ranking only, is read when NAV_SOURCE_PRIOR is
unset.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

from retrievers.base import number_setting
from retrievers.query_analysis import LONG_QUERY_CHARS

NON_SOURCE_PRIOR = 0.5
PRIOR_ENV = "NAV_SOURCE_PRIOR"
OLD_PRIOR_ENV = "NAV_FILE_PRIOR"
KINDS = ("test", "docs", "example", "tooling", "vendored")

_TEST_DIR = re.compile(r"(^|/)(tests?|testing)(/|$)")
_TEST_FILE = re.compile(r"(^|/)(test_[^/]*|[^/]*_tests?\.py|conftest\.py)$")
_DOCS_DIR = re.compile(r"(^|/)(docs?)(/|$)")
# A release-notes file is prose: no extension, or a text one (CHANGES.rst, HISTORY.md, NEWS, whats-new-2.0.txt);
# changes.py is code.
_RELEASE_NOTES = re.compile(r"^(changes|changelog|change_log|history|news|releases?|release[-_]notes|"
                            r"whats[-_]?new)([-_][\w.-]*?)?(\.(rst|md|txt|markdown|adoc|rdoc|org))?$", re.IGNORECASE)
_EXAMPLE_DIR = re.compile(r"(^|/)(examples?|samples?|benchmarks?)(/|$)")
_TOOLING_DIR = re.compile(r"(^|/)(\.github|\.gitlab|\.circleci|\.azure-pipelines|\.buildkite)(/|$)")
_TOOLING_FILE = re.compile(r"^(\.?pylintrc|tox\.ini|setup\.cfg|\.flake8|mypy\.ini|\.mypy\.ini|\.coveragerc|"
                           r"\.pre-commit-config\.ya?ml|\.travis\.ya?ml|appveyor\.ya?ml|azure-pipelines\.ya?ml|"
                           r"\.gitlab-ci\.ya?ml|codecov\.ya?ml|\.readthedocs\.ya?ml|\.editorconfig|"
                           r"\.git-blame-ignore-revs|\.gitattributes|\.mailmap)$", re.IGNORECASE)
_EXTRA_VENDOR_DIRS = frozenset({"extern", "externals"})

# What a query says when it asks for a kind (the Chinese words too: a Chinese question about tests would
# otherwise be discounted where its English twin is not).
_ASKS = {
    "test": re.compile(r"\b(tests?|tested|testing|pytest|unittest|test ?suite)\b|测试", re.IGNORECASE),
    "docs": re.compile(r"\b(docs?|documented|documentation|changelog|change log|release notes?|what'?s new|"
                       r"changes\.rst|history\.rst|news\.rst)\b|文档|更新日志|发布说明", re.IGNORECASE),
    "example": re.compile(r"\b(examples?|samples?|benchmarks?)\b|示例|例子|样例", re.IGNORECASE),
    "tooling": re.compile(r"\b(ci|workflows?|github actions|travis|pipelines?|issue templates?|pylintrc|tox|"
                          r"setup\.cfg|flake8|mypy\.ini|coveragerc|pre-commit|lint(er|ing)? config)\b",
                          re.IGNORECASE),
    "vendored": re.compile(r"\b(vendor(ed|ing)?|third[- ]party|bundled cop(y|ies))\b", re.IGNORECASE),
}


@functools.lru_cache(maxsize=1 << 16)
def non_source_kind(path: str) -> str | None:
    """Which kind of non-source a repository-relative path is (KINDS), or None for source. Cached: every query
    asks it of each of its few hundred candidates, ~10 us apiece uncached (a long-lived `nav mcp` asks again
    and again of the same paths)."""
    from navigator.index.embed_rule import category
    name = path.rsplit("/", 1)[-1]
    parts = PurePosixPath(path).parts[:-1]
    if category(path) == "vendored" or any(p.lower() in _EXTRA_VENDOR_DIRS for p in parts) \
            or "packages" in parts[1:]:
        return "vendored"
    if _TEST_DIR.search(path) or _TEST_FILE.search(path):
        return "test"
    if _DOCS_DIR.search(path) or _RELEASE_NOTES.match(name):
        return "docs"
    if _EXAMPLE_DIR.search(path):
        return "example"
    if _TOOLING_DIR.search(path) or _TOOLING_FILE.match(name):
        return "tooling"
    return None


def is_non_source(path: str) -> bool:
    return non_source_kind(path) is not None


def asks_for_non_source(query: str) -> bool:
    """Whether the query asks for any kind of non-source (the text a bug report's rule reads: its title)."""
    return bool(asked_kinds(query))


def asked_kinds(query: str) -> frozenset[str]:
    text = query.strip().split("\n", 1)[0] if len(query) > LONG_QUERY_CHARS else query
    return frozenset(kind for kind, pattern in _ASKS.items() if pattern.search(text))


@dataclass(frozen=True)
class SourcePrior:
    """The prior for one query: what each path's evidence is multiplied by."""
    base: float                       # the configured factor (NAV_SOURCE_PRIOR)
    strength: float                   # base for a question, base squared for a bug report
    asked: frozenset[str]             # kinds the query asks for: counted in full

    @classmethod
    def for_query(cls, base: float, query: str) -> "SourcePrior":
        strength = base * base if len(query) > LONG_QUERY_CHARS else base
        return cls(base, strength, asked_kinds(query))

    @property
    def active(self) -> bool:
        return self.strength < 1.0 and self.asked != frozenset(KINDS)

    def factor(self, path: str) -> float:
        kind = non_source_kind(path)
        return 1.0 if kind is None or kind in self.asked else self.strength


def prior_setting(extra: Mapping[str, str]) -> float:
    """The configured factor: NAV_SOURCE_PRIOR, else NAV_FILE_PRIOR, else NON_SOURCE_PRIOR; refused outside (0, 1]."""
    name = PRIOR_ENV if extra.get(PRIOR_ENV, "").strip() or not extra.get(OLD_PRIOR_ENV, "").strip() else OLD_PRIOR_ENV
    return number_setting(extra, name, NON_SOURCE_PRIOR, valid=lambda v: 0 < v <= 1, wanted="a number in (0, 1]",
                          hint=f"unset it for the default ({NON_SOURCE_PRIOR:g}); 1 turns the prior off")
