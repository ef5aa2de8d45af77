"""Retrieval metrics as pure functions over rankings and ranks. No index, no model.

A ranking is a best-first list of chunk-like records. Accepted shapes (duck-typed so the harness
never imports the index): a RetrievedChunk (fields read from `.chunk`), any object with `.path`,
`.text`, `.tokens` and optionally `.heads`, or a dict with those keys (a RetrievedChunk.to_json()).
`heads` maps a head name (vector, bm25, ...) to the 1-based rank that head gave the chunk, as an int,
a HeadHit or {"rank": r}.

Matching (the format's rule): a chunk matches an item when the paths are equal and, where the item
has a text, that text occurs in the chunk's own text. An expected text straddling two chunks
matches neither.

Ranks are 1-based; None means absent (not in the ranking, i.e. beyond the candidate depth).
The per-query metrics all return a float in [0, 1], so hit and coverage can be averaged alike,
but which one a query gets is decided by its schema (expect_any / expect_all), never its category.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from chunkers.base import estimate_tokens
from navigator.evaluation.queryset import MODE_ALL, MODE_ANY, ExpectItem

Rank = int | None


@dataclass(frozen=True)
class ChunkView:
    """The fields of a chunk-like record the metrics read."""
    path: str
    text: str
    tokens: int
    heads: Mapping[str, int] = field(default_factory=dict)


def view_chunk(record: object) -> ChunkView:
    if isinstance(record, ChunkView):
        return record
    if isinstance(record, Mapping):
        path, text, tokens, heads = record["path"], record["text"], record.get("tokens"), record.get("heads")
    else:
        source = getattr(record, "chunk", record)  # RetrievedChunk wraps its CodeChunk
        path, text, tokens = source.path, source.text, getattr(source, "tokens", None)
        heads = getattr(record, "heads", None)
    if tokens is None:
        tokens = estimate_tokens(text)
    return ChunkView(path=path, text=text, tokens=int(tokens), heads=_head_ranks(heads or {}))


def _head_ranks(heads: Mapping[str, object]) -> dict[str, int]:
    ranks = {}
    for name, hit in heads.items():
        if isinstance(hit, Mapping):
            ranks[name] = int(hit["rank"])
        elif isinstance(hit, int):
            ranks[name] = hit
        else:
            ranks[name] = int(getattr(hit, "rank"))
    return ranks


def view_ranking(ranking: Iterable[object]) -> list[ChunkView]:
    return [view_chunk(record) for record in ranking]


def matches(chunk: object, item: ExpectItem) -> bool:
    view = view_chunk(chunk)
    return view.path == item.path and (item.text is None or item.text in view.text)


# ---------------------------------------------------------------- ranks

def item_ranks(
    ranking: Sequence[object],
    items: Sequence[ExpectItem],
    *,
    positions: Sequence[int] | None = None,
) -> list[Rank]:
    """Per item, the rank of the first chunk that matches it (None: absent).

    positions gives each chunk's rank when it is not its list position (e.g. the rank a head gave
    it); by default the chunk at index i has rank i + 1.
    """
    views = view_ranking(ranking)
    ranks_of = positions if positions is not None else range(1, len(views) + 1)
    found: list[Rank] = []
    for item in items:
        rank = next((r for view, r in zip(views, ranks_of) if matches(view, item)), None)
        found.append(rank)
    return found


def file_order(ranking: Sequence[object]) -> list[str]:
    """Files ranked by the first appearance of any of their chunks."""
    order: dict[str, None] = {}
    for view in view_ranking(ranking):
        order.setdefault(view.path, None)
    return list(order)


def file_ranks(ranking: Sequence[object], items: Sequence[ExpectItem]) -> list[Rank]:
    """Per item, the rank of its file in the file order (texts are ignored: file-level localization)."""
    rank_of = {path: position for position, path in enumerate(file_order(ranking), start=1)}
    return [rank_of.get(item.path) for item in items]


def _within(rank: Rank, k: int) -> bool:
    return rank is not None and rank <= k


# ---------------------------------------------------------------- per-query scores

def hit_at_k(ranks: Sequence[Rank], k: int) -> float:
    """expect_any: 1 if any item is matched within the top k, else 0."""
    return 1.0 if any(_within(r, k) for r in ranks) else 0.0


def coverage_at_k(ranks: Sequence[Rank], k: int) -> float:
    """expect_all: matched items / all items, over the top k."""
    if not ranks:
        return 0.0
    return sum(_within(r, k) for r in ranks) / len(ranks)


def file_acc_at_k(ranks: Sequence[Rank], k: int, mode: str = MODE_ALL) -> float:
    """File-level accuracy over file ranks: 1 if every item's file is among the top k files
    (expect_all; the SWE-bench localization convention), or any item's file (expect_any, whose
    items are alternatives)."""
    inside = [_within(r, k) for r in ranks]
    if not inside:
        return 0.0
    return 1.0 if (all(inside) if mode == MODE_ALL else any(inside)) else 0.0


def score_at_k(ranks: Sequence[Rank], k: int, mode: str, level: str = "chunk") -> float:
    """The metric the schema calls for: hit@k / coverage@k at chunk level, file Acc@k at file level."""
    if level == "file":
        return file_acc_at_k(ranks, k, mode)
    if mode == MODE_ANY:
        return hit_at_k(ranks, k)
    return coverage_at_k(ranks, k)


def ceiling_at_pool(ranks: Sequence[Rank], pool: int, mode: str) -> float:
    """What a perfect reranker reaches when it reorders the top `pool` candidates.

    It can move any candidate to the top, so an expect_any query is answerable iff some item is
    within the pool, and an expect_all query covers exactly the items within the pool (given k is
    at least the number of items). That is the score at k = pool.
    """
    return hit_at_k(ranks, pool) if mode == MODE_ANY else coverage_at_k(ranks, pool)


# ---------------------------------------------------------------- tokens

def tokens_at_k(ranking: Sequence[object], k: int, *, positions: Sequence[int] | None = None) -> int:
    """Tokens of the chunks ranked within the top k (what reading the top k costs)."""
    views = view_ranking(ranking)
    ranks_of = positions if positions is not None else range(1, len(views) + 1)
    return sum(view.tokens for view, r in zip(views, ranks_of) if r <= k)


def file_prefix_tokens(ranking: Sequence[object], k: int) -> int:
    """Tokens read down the ranking until the top k files have been seen (file level's cost)."""
    seen: set[str] = set()
    total = 0
    for view in view_ranking(ranking):
        if view.path not in seen:
            if len(seen) == k:
                break
            seen.add(view.path)
        total += view.tokens
    return total


# ---------------------------------------------------------------- budgeted context (nav eval --budget)

def recall_at_budget(returned: Sequence[object], items: Sequence[ExpectItem], mode: str) -> float:
    """hit (expect_any) or coverage (expect_all) over everything a context selector returned."""
    # A returned set is a ranking whose every member counts: the score at k = its size.
    return score_at_k(item_ranks(returned, items), len(returned), mode)


def tokens_per_answered(tokens_spent: Sequence[int], scores: Sequence[float]) -> float | None:
    """Total tokens over all queries / number of queries fully answered (score 1). None if none was."""
    answered = sum(1 for score in scores if score >= 1.0)
    if answered == 0:
        return None
    return sum(tokens_spent) / answered


def wasted_tokens(returned: Sequence[object], items: Sequence[ExpectItem]) -> int:
    """Returned tokens in chunks that match no expected item."""
    return sum(view.tokens for view in view_ranking(returned) if not any(matches(view, it) for it in items))


def wasted_context_ratio(returned: Sequence[object], items: Sequence[ExpectItem]) -> float:
    """Share of returned tokens outside every expected item's chunk (0 when nothing was returned).
    Over a whole set, take sum(wasted_tokens) / sum(returned tokens) rather than a mean of ratios."""
    total = sum(view.tokens for view in view_ranking(returned))
    return wasted_tokens(returned, items) / total if total else 0.0
