"""Which paths are not the source a question usually asks about (tests, docs, examples, benchmarks), and how much
their evidence counts: one rule for the chunk ranking (hybrid, and the share graph passes along an edge) and the
file ranking (retrievers.file_rank).

A test repeats the words of the behaviour it checks and a doc page describes it in prose, so both match a question
well; a developer asking how something works or what a default is wants the code that does it. Their scores are
multiplied by NON_SOURCE_PRIOR unless the question itself speaks of tests, docs or examples (patches/0002 for
files, patches/0015 for chunks).

Setting: NAV_SOURCE_PRIOR, a number in (0, 1], default 0.5; 1 turns the prior off. NAV_FILE_PRIOR, its name when
it covered the file ranking only, is read when NAV_SOURCE_PRIOR is unset.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

from retrievers.base import number_setting

NON_SOURCE_PRIOR = 0.5
PRIOR_ENV = "NAV_SOURCE_PRIOR"
OLD_PRIOR_ENV = "NAV_FILE_PRIOR"
_NON_SOURCE_DIR = re.compile(r"(^|/)(tests?|testing|docs?|examples?|samples?|benchmarks?)(/|$)")
_TEST_FILE = re.compile(r"(^|/)(test_[^/]*|[^/]*_tests?\.py|conftest\.py)$")
# The Chinese words too: without them a Chinese question about tests would be discounted where its English twin
# is not (测试 test, 单元测试 unit test, 文档 documentation, 示例 / 例子 / 样例 example).
_ASKS_NON_SOURCE = re.compile(r"\b(tests?|tested|testing|pytest|unittest|docs?|documented|documentation|examples?|samples?|benchmarks?)\b"
                              r"|测试|文档|示例|例子|样例", re.IGNORECASE)


def is_non_source(path: str) -> bool:
    return bool(_NON_SOURCE_DIR.search(path) or _TEST_FILE.search(path))


def asks_for_non_source(query: str) -> bool:
    return bool(_ASKS_NON_SOURCE.search(query))


def factor_for(prior: float, query: str) -> float:
    """What a test, doc or example's evidence counts for on this query: 1 when the query asks for them."""
    return 1.0 if asks_for_non_source(query) else prior


def prior_setting(extra: Mapping[str, str]) -> float:
    """The configured factor: NAV_SOURCE_PRIOR, else NAV_FILE_PRIOR, else NON_SOURCE_PRIOR; refused outside (0, 1]."""
    name = PRIOR_ENV if extra.get(PRIOR_ENV, "").strip() or not extra.get(OLD_PRIOR_ENV, "").strip() else OLD_PRIOR_ENV
    return number_setting(extra, name, NON_SOURCE_PRIOR, valid=lambda v: 0 < v <= 1, wanted="a number in (0, 1]",
                          hint=f"unset it for the default ({NON_SOURCE_PRIOR:g}); 1 turns the prior off")
