"""The retriever interface: a query and k in, ranked chunks out, each with what every head gave it."""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from chunkers.base import CodeChunk
from navigator.core.errors import UsageError

if TYPE_CHECKING:
    from navigator.core.config import Config
    from navigator.index.nav_index import NavIndex


def number_setting(extra: Mapping[str, str], name: str, default, *, valid: Callable[[float], bool], wanted: str,
                   hint: str, cast: Callable[[str], float] = float):
    """A retriever's numeric setting from the environment (config.extra): `default` when unset, else `cast` of
    it, refused with a UsageError when it does not parse or `valid` rejects it (nan fails every comparison)."""
    text = extra.get(name, "").strip()
    if not text:
        return default
    try:
        value = cast(text)
    except ValueError:
        value = None
    if value is None or not valid(value):
        raise UsageError(f"{name} must be {wanted}, got {extra[name]!r}", hint=hint)
    return value


@dataclass(frozen=True)
class HeadHit:
    """Where one head (vector, bm25, rerank, ...) placed a chunk: 1-based rank and its raw score."""
    rank: int
    score: float


@dataclass
class RetrievedChunk:
    chunk: CodeChunk
    score: float                      # the final score of the retriever that returned it
    rank: int                         # 1-based position in the final ranking
    heads: dict[str, HeadHit] = field(default_factory=dict)

    def to_json(self) -> dict:
        c = self.chunk
        return {
            "rank": self.rank, "score": round(self.score, 6), "id": c.id, "path": c.path,
            "start_line": c.start_line, "end_line": c.end_line, "kind": c.kind, "symbol": c.symbol,
            "parent": c.parent, "tokens": c.tokens,
            "heads": {name: {"rank": h.rank, "score": round(h.score, 6)} for name, h in self.heads.items()},
            "text": c.text,
        }


class Retriever(ABC):
    """A ranking over one index. Subclasses set `name` and implement `retrieve`.

    Construction is cheap; heavy state (models, BM25 statistics) loads on first use.
    """

    name: str = ""
    # Whether retrieve() embeds the query: a front end then starts loading the query encoder at once
    # (NavIndex.preload_query_encoder) instead of when the vector head first asks for it.
    embeds_queries: bool = True

    def __init__(self, index: "NavIndex", config: "Config"):
        self.index = index
        self.config = config

    @abstractmethod
    def retrieve(self, query: str, k: int) -> list[RetrievedChunk]:
        """The best `k` chunks for `query`, best first, ranks 1..n (n <= k)."""
